import { ConfigurationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';

/**
 * What a failed write of the outbox's own throws: for a missing table, a
 * {@link ConfigurationError} said the way the relay and `health` say it ("the outbox tables
 * are missing. Run `npx outbox migrate`", the driver's error as its `cause`); any other
 * error as it is. Asked only once the statement has failed (the dialect's `missingTable`),
 * by a catch around the caller's own `await` (no closure, no promise of its own on fire()'s
 * path), so the hot path pays nothing. For the store's calls alone: a missing table of the
 * application's, in a `targets` function or an `inline` receiver, is the application's
 * error and passes untouched.
 */
export function outboxWriteError(rt: Runtime, where: string, error: unknown): unknown {
  if (!rt.dialect.missingTable(error)) return error;
  return new ConfigurationError(
    `${where}: the outbox tables are missing. Run \`npx outbox migrate\` (or \`await outbox.migrate()\`) with the same database options first (${rt.dialect.title}: ${(error as Error).message})`,
    { path: 'migrate', cause: error },
  );
}
