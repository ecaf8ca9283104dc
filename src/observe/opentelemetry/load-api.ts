import { createRequire } from 'node:module';
import type * as OpenTelemetryApi from '@opentelemetry/api';
import { ConfigurationError } from '../../errors/outbox-error.js';

/** The `@opentelemetry/api` module. */
export type OpenTelemetryModule = typeof OpenTelemetryApi;

let api: OpenTelemetryModule | undefined;

/**
 * Load `@opentelemetry/api`, an optional peer dependency, when `openTelemetry()` is first
 * called — never when `outboxkit` is imported. Synchronous (`require`), so `openTelemetry()`
 * can hand `createOutbox` its hooks at once; the API keeps its registered tracer provider,
 * propagator and context manager on a global of its major version, so this copy and the
 * application's `import` of it see the same ones.
 *
 * @throws {ConfigurationError} when the package is not installed, saying how to install it.
 */
export function loadOpenTelemetryApi(): OpenTelemetryModule {
  if (api) return api;
  try {
    api = createRequire(import.meta.url)('@opentelemetry/api') as OpenTelemetryModule;
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === 'MODULE_NOT_FOUND') {
      throw new ConfigurationError(
        'openTelemetry() needs the @opentelemetry/api package, which is not installed: run `npm install @opentelemetry/api` (and set up an OpenTelemetry SDK to export the spans)',
        { cause: error },
      );
    }
    throw error;
  }
  return api;
}
