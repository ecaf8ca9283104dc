/**
 * undici is an optional peer dependency (only an app sending webhooks installs it), so it
 * is imported here, lazily, when a webhook transport is created — never by
 * `import 'outboxkit'`.
 */
import { ConfigurationError } from '../../errors/outbox-error.js';

/** What the webhook transport uses of undici (its types stay out of our public API). */
export type Undici = typeof import('undici');

let loading: Promise<Undici> | undefined;

/** Load undici once per process; a missing package says how to install it. */
export function loadUndici(): Promise<Undici> {
  loading ??= import('undici').catch((error: unknown) => {
    loading = undefined;
    throw undiciNotInstalled(error);
  });
  return loading;
}

/**
 * When the failure is the package missing, a `ConfigurationError` saying how to install
 * it; any other failure passed on as it is.
 */
export function undiciNotInstalled(error: unknown): unknown {
  const e = error as NodeJS.ErrnoException;
  if (e?.code !== 'ERR_MODULE_NOT_FOUND' || !/['"]undici['"]/.test(String(e.message))) return error;
  return new ConfigurationError(
    'webhook() needs the undici package, which is not installed: run `npm install undici`',
    { cause: error },
  );
}
