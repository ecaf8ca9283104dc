import { ConfigurationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';

/**
 * The outbox's own write, with a missing table said the way the relay and `health` say it:
 * a {@link ConfigurationError} "the outbox tables are missing. Run `npx outbox migrate`",
 * the driver's error as its `cause`. Read only once the statement has failed (the
 * dialect's `missingTable`), so the hot path runs no query of its own. Wraps the store's
 * calls alone: a missing table of the application's, in a `targets` function or an
 * `inline` receiver, is the application's error and passes untouched.
 */
export async function outboxWrite<T>(
  rt: Runtime,
  where: string,
  write: () => Promise<T>,
): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (!rt.dialect.missingTable(error)) throw error;
    throw new ConfigurationError(
      `${where}: the outbox tables are missing. Run \`npx outbox migrate\` (or \`await outbox.migrate()\`) with the same database options first (${rt.dialect.title}: ${(error as Error).message})`,
      { path: 'migrate', cause: error },
    );
  }
}
