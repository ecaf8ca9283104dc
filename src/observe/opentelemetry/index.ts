/**
 * `outboxkit/opentelemetry`: OpenTelemetry tracing for an outbox — a span per delivery
 * attempt, continuing the trace its event was fired in. Needs `@opentelemetry/api` (an
 * optional peer dependency); importing `outboxkit` itself never loads it.
 * @packageDocumentation
 * @module outboxkit/opentelemetry
 */

export { SPAN_ATTRIBUTES } from './attributes.js';
export type { OpenTelemetryOptions, OutboxTelemetry } from './open-telemetry.js';
export { openTelemetry } from './open-telemetry.js';
