import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';
import { ConfigurationError } from '../../errors/outbox-error.js';

/** The `prom-client` module. */
export type PromClientModule = typeof PromClient;

let client: PromClientModule | undefined;

/**
 * Load `prom-client`, an optional peer dependency, when `outbox.metrics()` is first called
 * — never when `outboxkit` is imported, so an application without Prometheus installs and
 * loads nothing of it. Synchronous (`require`), so `metrics()` hands back its registry at
 * once.
 *
 * @throws {ConfigurationError} when the package is not installed, saying how to install it.
 */
export function loadPromClient(): PromClientModule {
  if (client) return client;
  try {
    client = createRequire(import.meta.url)('prom-client') as PromClientModule;
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === 'MODULE_NOT_FOUND') {
      throw new ConfigurationError(
        'outbox.metrics() needs the prom-client package, which is not installed: run `npm install prom-client`',
        { cause: error },
      );
    }
    throw error;
  }
  return client;
}
