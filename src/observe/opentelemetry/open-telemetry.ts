import type {
  Attributes,
  Context,
  Exception,
  Link,
  Span,
  TextMapGetter,
  TextMapPropagator,
  Tracer,
} from '@opentelemetry/api';
import type { JsonValue } from '../../declare/types.js';
import type {
  AroundDelivery,
  DeliveryAttempt,
  DeliveryOutcome,
  FireHeaders,
} from '../around-delivery.js';
import { SPAN_ATTRIBUTES as A } from './attributes.js';
import { loadOpenTelemetryApi, type OpenTelemetryModule } from './load-api.js';

/** Options of {@link openTelemetry}. */
export interface OpenTelemetryOptions {
  /**
   * The tracer delivery spans are started with.
   * @defaultValue `trace.getTracer('outboxkit')` of the global tracer provider (a proxy, so a
   * provider registered after `createOutbox` is used too)
   */
  readonly tracer?: Tracer;
  /**
   * How the trace context is written into an event's headers at `fire()` and read back at
   * delivery. The W3C trace context propagator writes `traceparent` and `tracestate`.
   * @defaultValue the global propagator (`propagation` of `@opentelemetry/api`): the SDK's
   * (`NodeSDK` registers W3C trace context and baggage). Without one registered nothing is
   * written: pass `new W3CTraceContextPropagator()` from `@opentelemetry/core` then.
   */
  readonly propagator?: Pick<TextMapPropagator, 'inject' | 'extract'>;
}

/**
 * What {@link openTelemetry} returns: exactly the `createOutbox` options it sets, so
 * `createOutbox(config, { sequelize, ...openTelemetry() })` wires it, and
 * `aroundDelivery: [telemetry.aroundDelivery, mine]` composes it with hooks of your own.
 */
export interface OutboxTelemetry {
  /** A span around each durable attempt, continuing the trace its event was fired in. */
  readonly aroundDelivery: AroundDelivery;
  /** The active trace context, written into every fired event's headers. */
  readonly fireHeaders: FireHeaders;
}

/** Reads the trace context back out of a stored event's headers (string values only). */
const HEADERS: TextMapGetter<Readonly<Record<string, JsonValue>>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const value = carrier[key];
    return typeof value === 'string' ? value : undefined;
  },
};

/**
 * OpenTelemetry tracing for an outbox, built on `aroundDelivery` and `fireHeaders`: one
 * trace runs from the request that fired an event to the handler that ran it or the broker
 * send that forwarded it, however long after and in whichever process.
 *
 * - At `fire()`, the active context's trace context (`traceparent`, `tracestate`, as the
 *   propagator writes them) goes into the event's headers; with no active span, nothing is.
 *   A header the message sets itself wins.
 * - Each durable attempt gets a span, `outbox deliver <receiverKey>`: kind CONSUMER for a
 *   handler (semantic conventions' `process`), PRODUCER for a transport (`send`). For one
 *   delivery its PARENT is the context read from the event's headers, so the span sits in the
 *   firing request's trace; the receiver runs with the span active, so its own spans (the
 *   handler's queries, the broker client's send) are its children, and events it fires carry
 *   it on. A `deliverBatch` call of several events is one span with a LINK to each event's
 *   context instead (the conventions' batch shape: a span has one parent, a batch many
 *   origins), parented by whatever context is active in the relay.
 * - Attributes: see {@link SPAN_ATTRIBUTES}. A failed attempt (failed, timed out, retry after,
 *   handed back, lost) sets status ERROR with the error recorded as an exception; a NotYet is
 *   no error.
 *
 * Needs `@opentelemetry/api` (an optional peer dependency, loaded by this call; importing
 * `outboxkit` never loads it) and an SDK set up by the application to export the spans.
 *
 * @example
 * ```ts
 * import { openTelemetry } from 'outboxkit/opentelemetry';
 * const outbox = createOutbox(config, { sequelize, ...openTelemetry() });
 * ```
 * @throws {ConfigurationError} when `@opentelemetry/api` is not installed.
 */
export function openTelemetry(options: OpenTelemetryOptions = {}): OutboxTelemetry {
  const api = loadOpenTelemetryApi();
  const tracer = options.tracer ?? api.trace.getTracer('outboxkit');
  const propagator = options.propagator ?? api.propagation;

  const fireHeaders: FireHeaders = () => {
    const carrier: Record<string, string> = {};
    propagator.inject(api.context.active(), carrier, api.defaultTextMapSetter);
    return carrier;
  };

  const aroundDelivery: AroundDelivery = async (attempt, next) => {
    const active = api.context.active();
    const { items } = attempt;
    let parent = active;
    let links: Link[] | undefined;
    if (items.length === 1) parent = propagator.extract(active, items[0].event.headers, HEADERS);
    else links = linksOf(api, propagator, attempt);
    const span = tracer.startSpan(
      `outbox deliver ${attempt.receiverKey}`,
      {
        kind: attempt.receiverKind === 'handler' ? api.SpanKind.CONSUMER : api.SpanKind.PRODUCER,
        attributes: startAttributes(attempt),
        links,
      },
      parent,
    );
    try {
      const outcomes = await api.context.with(api.trace.setSpan(parent, span), next);
      describeOutcomes(api, span, outcomes);
    } finally {
      span.end();
    }
  };

  return { aroundDelivery, fireHeaders };
}

/** The attributes known when the attempt starts. */
function startAttributes(attempt: DeliveryAttempt): Attributes {
  const { items } = attempt;
  const attributes: Attributes = {
    [A.messagingSystem]: 'outboxkit',
    [A.operationName]: 'deliver',
    [A.operationType]: attempt.receiverKind === 'handler' ? 'process' : 'send',
    [A.receiverKey]: attempt.receiverKey,
    [A.receiverKind]: attempt.receiverKind,
  };
  const name = items[0]?.event.name;
  if (name !== undefined && items.every((item) => item.event.name === name))
    attributes[A.destinationName] = name;
  if (items.length === 1) {
    const { event, context } = items[0];
    attributes[A.messageId] = event.id;
    if (context.deliveryId !== null) attributes[A.deliveryId] = context.deliveryId;
    attributes[A.attempt] = context.attempt;
    if (context.target !== '') attributes[A.target] = context.target;
  } else {
    attributes[A.batchCount] = items.length;
  }
  return attributes;
}

/** A batch's links: one per item whose headers carry a valid trace context. */
function linksOf(
  api: OpenTelemetryModule,
  propagator: Pick<TextMapPropagator, 'extract'>,
  attempt: DeliveryAttempt,
): Link[] {
  const links: Link[] = [];
  for (const { event, context } of attempt.items) {
    const extracted: Context = propagator.extract(api.ROOT_CONTEXT, event.headers, HEADERS);
    const spanContext = api.trace.getSpanContext(extracted);
    if (!spanContext || !api.trace.isSpanContextValid(spanContext)) continue;
    const attributes: Attributes = {
      [A.messageId]: event.id,
      [A.attempt]: context.attempt,
    };
    if (context.deliveryId !== null) attributes[A.deliveryId] = context.deliveryId;
    links.push({ context: spanContext, attributes });
  }
  return links;
}

/** Whether an outcome is a failure of the attempt (status ERROR). */
function failed(outcome: DeliveryOutcome): outcome is Extract<DeliveryOutcome, { error: unknown }> {
  return outcome.status !== 'succeeded' && outcome.status !== 'notYet' && outcome.status !== 'lost';
}

/** The outcome attributes, the status, and each distinct failure recorded once. */
function describeOutcomes(
  api: OpenTelemetryModule,
  span: Span,
  outcomes: readonly DeliveryOutcome[],
): void {
  const statuses = new Set(outcomes.map((o) => o.status));
  span.setAttribute(A.outcome, statuses.size === 1 ? outcomes[0].status : 'mixed');
  const errors = new Set<unknown>();
  let deadLettered = false;
  let lost = false;
  for (const outcome of outcomes) {
    if (outcome.status === 'lost') lost = true;
    if (!failed(outcome)) continue;
    errors.add(outcome.error);
    if ('deadLettered' in outcome && outcome.deadLettered) deadLettered = true;
  }
  if (deadLettered) span.setAttribute(A.deadLettered, true);
  if (errors.size === 0 && !lost) return;
  const first = errors.values().next().value;
  for (const error of errors) span.recordException(asException(error));
  span.setAttribute(A.errorType, first === undefined ? 'ClaimLost' : errorType(first));
  span.setStatus({
    code: api.SpanStatusCode.ERROR,
    message:
      first === undefined
        ? 'the claim was lost to another worker'
        : first instanceof Error
          ? first.message
          : String(first),
  });
}

function asException(error: unknown): Exception {
  if (error instanceof Error) return error;
  return typeof error === 'string' ? error : String(error);
}

function errorType(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}
