import {
  context,
  createTraceState,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineOutbox, event, NotYet, type OutboxEvent, receiver } from '../../src/index.js';
import { openTelemetry, SPAN_ATTRIBUTES } from '../../src/observe/opentelemetry/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/drain.js';
import { openOutbox } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
/** The application's own tracer: the request that fires. */
const app = provider.getTracer('test-app');

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  propagation.disable();
  context.disable();
});
beforeEach(() => exporter.reset());

/** Run `fn` inside a new active span of the app, ended once `fn` settles; returns both. */
async function inRequest<T>(
  name: string,
  fn: () => Promise<T>,
  parent = context.active(),
): Promise<{ span: Span; result: T }> {
  const span = app.startSpan(name, {}, parent);
  try {
    const result = await context.with(trace.setSpan(parent, span), fn);
    return { span, result };
  } finally {
    span.end();
  }
}

const deliverySpans = (receiverKey?: string): ReadableSpan[] =>
  exporter
    .getFinishedSpans()
    .filter((s) =>
      receiverKey ? s.name === `outbox deliver ${receiverKey}` : s.name.startsWith('outbox '),
    );

const Placed = event({ schema: z.object({ orderId: z.string() }) });
const Shipped = event({ schema: z.object({ orderId: z.string() }) });

describeEachDialect('openTelemetry', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it("a span around fire() is the parent of the handler's delivery span, which is active while the handler runs", async () => {
    const inHandler: string[] = [];
    const config = defineOutbox({
      events: { 'shop.Placed': Placed },
      receivers: {
        'shop.ship': receiver(Placed, {
          handle: () => void inHandler.push(trace.getActiveSpan()?.spanContext().spanId ?? ''),
        }),
      },
    });
    const outbox = await openOutbox(db, config, { ...openTelemetry() });
    const { span: request, result: fired } = await inRequest('POST /orders', () =>
      outbox.fire('shop.Placed', { orderId: 'o1' }),
    );

    await drainOutbox(outbox);

    const [delivery] = deliverySpans('shop.ship');
    expect(delivery).toBeDefined();
    expect(delivery.spanContext().traceId).toBe(request.spanContext().traceId);
    expect(delivery.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(delivery.kind).toBe(SpanKind.CONSUMER);
    expect(delivery.status.code).toBe(SpanStatusCode.UNSET);
    expect(inHandler).toEqual([delivery.spanContext().spanId]);
    const [row] = await deliveryIds(outbox);
    expect(delivery.attributes).toEqual({
      [SPAN_ATTRIBUTES.messagingSystem]: 'outboxkit',
      [SPAN_ATTRIBUTES.operationName]: 'deliver',
      [SPAN_ATTRIBUTES.operationType]: 'process',
      [SPAN_ATTRIBUTES.destinationName]: 'shop.Placed',
      [SPAN_ATTRIBUTES.messageId]: fired.id,
      [SPAN_ATTRIBUTES.receiverKey]: 'shop.ship',
      [SPAN_ATTRIBUTES.receiverKind]: 'handler',
      [SPAN_ATTRIBUTES.deliveryId]: row,
      [SPAN_ATTRIBUTES.attempt]: 1,
      [SPAN_ATTRIBUTES.outcome]: 'succeeded',
    });
  });

  it("a span around fire() is the parent of a transport's delivery span, which is active during the send", async () => {
    const inSend: string[] = [];
    const config = defineOutbox({
      events: { 'shop.Placed': Placed },
      receivers: {
        'shop.kafka': receiver(Placed, {
          deliver: {
            deliver: async () =>
              void inSend.push(trace.getActiveSpan()?.spanContext().spanId ?? ''),
          },
        }),
        'shop.batched': receiver(Placed, {
          deliver: {
            deliverBatch: async (items) => {
              inSend.push(trace.getActiveSpan()?.spanContext().spanId ?? '');
              return items.map(() => ({ status: 'sent' }));
            },
          },
        }),
      },
    });
    const outbox = await openOutbox(db, config, { ...openTelemetry() });
    const { span: request } = await inRequest('POST /orders', () =>
      outbox.fire('shop.Placed', { orderId: 'o1' }),
    );

    await drainOutbox(outbox);

    // A batch of one event is one delivery: parented like any other.
    for (const key of ['shop.kafka', 'shop.batched']) {
      const [delivery] = deliverySpans(key);
      expect(delivery.spanContext().traceId, key).toBe(request.spanContext().traceId);
      expect(delivery.parentSpanContext?.spanId, key).toBe(request.spanContext().spanId);
      expect(delivery.kind, key).toBe(SpanKind.PRODUCER);
      expect(delivery.attributes[SPAN_ATTRIBUTES.operationType], key).toBe('send');
      expect(inSend, key).toContain(delivery.spanContext().spanId);
    }
  });

  it('fire() writes the active trace context into the event’s headers as traceparent and tracestate', async () => {
    const config = defineOutbox({ events: { 'shop.Placed': Placed }, receivers: {} });
    const outbox = await openOutbox(db, config, { ...openTelemetry() });
    // The request arrived with a trace state (a vendor's entry), as from an incoming traceparent.
    const incoming = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: 1,
      isRemote: true,
      traceState: createTraceState('vendor=abc'),
    });
    const { span, result: fired } = await inRequest(
      'POST /orders',
      () => outbox.fire('shop.Placed', { orderId: 'o1' }, { headers: { 'x-tenant': 't1' } }),
      incoming,
    );
    expect(fired.headers).toEqual({
      traceparent: `00-0af7651916cd43dd8448eb211c80319c-${span.spanContext().spanId}-01`,
      tracestate: 'vendor=abc',
      'x-tenant': 't1',
    });
  });

  it('without an active span no traceparent header is written, and the delivery span starts a trace of its own', async () => {
    const config = defineOutbox({
      events: { 'shop.Placed': Placed },
      receivers: { 'shop.ship': receiver(Placed, { handle: () => {} }) },
    });
    const outbox = await openOutbox(db, config, { ...openTelemetry() });
    const fired = await outbox.fire('shop.Placed', { orderId: 'o1' });
    expect(fired.headers).toEqual({});

    await drainOutbox(outbox);
    const [delivery] = deliverySpans('shop.ship');
    expect(delivery.parentSpanContext).toBeUndefined();
  });

  it('a failed attempt’s span has status ERROR with the exception recorded; a NotYet is no error', async () => {
    const config = defineOutbox({
      events: { 'shop.Placed': Placed },
      receivers: {
        'shop.charge': receiver(Placed, {
          handle: () => {
            throw new TypeError('card declined');
          },
          maxAttempts: 1,
        }),
        'shop.expire': receiver(Placed, {
          handle: () => {
            throw new NotYet(new Date(Date.now() + 86_400_000));
          },
        }),
      },
    });
    const outbox = await openOutbox(db, config, { ...openTelemetry() });
    await inRequest('POST /orders', () => outbox.fire('shop.Placed', { orderId: 'o1' }));

    await drainOutbox(outbox);

    const [charge] = deliverySpans('shop.charge');
    expect(charge.status).toEqual({ code: SpanStatusCode.ERROR, message: 'card declined' });
    expect(charge.attributes).toMatchObject({
      [SPAN_ATTRIBUTES.outcome]: 'failed',
      [SPAN_ATTRIBUTES.errorType]: 'TypeError',
      [SPAN_ATTRIBUTES.deadLettered]: true,
    });
    expect(charge.events.map((e) => [e.name, e.attributes?.['exception.message']])).toEqual([
      ['exception', 'card declined'],
    ]);
    const [expire] = deliverySpans('shop.expire');
    expect(expire.status.code).toBe(SpanStatusCode.UNSET);
    expect(expire.attributes[SPAN_ATTRIBUTES.outcome]).toBe('notYet');
    expect(expire.events).toEqual([]);
  });

  it('a deliverBatch call of several events is one span linked to each event’s trace', async () => {
    const config = defineOutbox({
      events: { 'shop.Placed': Placed },
      receivers: {
        'shop.kafka': receiver(Placed, {
          deliver: { deliverBatch: async (items) => items.map(() => ({ status: 'sent' })) },
        }),
      },
    });
    const outbox = await openOutbox(db, config, { ...openTelemetry() });
    const first = await inRequest('POST /orders', () =>
      outbox.fire('shop.Placed', { orderId: 'o1' }),
    );
    const second = await inRequest('POST /orders', () =>
      outbox.fire('shop.Placed', { orderId: 'o2' }),
    );
    // An event fired outside any span: in the batch, but nothing to link to.
    await outbox.fire('shop.Placed', { orderId: 'o3' });

    await drainOutbox(outbox);

    const spans = deliverySpans('shop.kafka');
    expect(spans).toHaveLength(1);
    const [batch] = spans;
    expect(batch.parentSpanContext).toBeUndefined();
    expect(batch.attributes).toMatchObject({
      [SPAN_ATTRIBUTES.batchCount]: 3,
      [SPAN_ATTRIBUTES.destinationName]: 'shop.Placed',
      [SPAN_ATTRIBUTES.outcome]: 'succeeded',
    });
    expect(batch.attributes[SPAN_ATTRIBUTES.messageId]).toBeUndefined();
    expect(batch.links.map((l) => [l.context.traceId, l.context.spanId])).toEqual([
      [first.span.spanContext().traceId, first.span.spanContext().spanId],
      [second.span.spanContext().traceId, second.span.spanContext().spanId],
    ]);
    expect(batch.links.map((l) => l.attributes?.[SPAN_ATTRIBUTES.messageId])).toEqual([
      first.result.id,
      second.result.id,
    ]);
  });

  it('an event fired by a handler continues the trace: its delivery span is a child of the handler’s', async () => {
    const config = defineOutbox({
      events: { 'shop.Placed': Placed, 'shop.Shipped': Shipped },
      receivers: {
        'shop.ship': receiver(Placed, {
          handle: async (e: OutboxEvent<{ orderId: string }>, ctx) => {
            await outbox.fire('shop.Shipped', e.payload, { transaction: ctx.transaction });
          },
        }),
        'shop.notify': receiver(Shipped, { handle: () => {} }),
      },
    });
    const outbox = await openOutbox(db, config, { ...openTelemetry() });
    const { span: request } = await inRequest('POST /orders', () =>
      outbox.fire('shop.Placed', { orderId: 'o1' }),
    );

    await drainOutbox(outbox);

    const [ship] = deliverySpans('shop.ship');
    const [notify] = deliverySpans('shop.notify');
    expect(ship.spanContext().traceId).toBe(request.spanContext().traceId);
    expect(notify.spanContext().traceId).toBe(request.spanContext().traceId);
    expect(notify.parentSpanContext?.spanId).toBe(ship.spanContext().spanId);
  });

  it('composes with hooks of the application’s own, which see the delivery span active', async () => {
    const seen: string[] = [];
    const config = defineOutbox({
      events: { 'shop.Placed': Placed },
      receivers: { 'shop.ship': receiver(Placed, { handle: () => {} }) },
    });
    const telemetry = openTelemetry();
    const outbox = await openOutbox(db, config, {
      fireHeaders: telemetry.fireHeaders,
      aroundDelivery: [
        telemetry.aroundDelivery,
        async (_attempt, next) => {
          seen.push(trace.getActiveSpan()?.spanContext().spanId ?? 'none');
          await next();
        },
      ],
    });
    await inRequest('POST /orders', () => outbox.fire('shop.Placed', { orderId: 'o1' }));
    await drainOutbox(outbox);
    expect(seen).toEqual([deliverySpans('shop.ship')[0].spanContext().spanId]);
  });
});

/** The delivery row ids of an outbox, in event order. */
async function deliveryIds(outbox: Parameters<typeof drainOutbox>[0]): Promise<string[]> {
  return (await runtimeOf(outbox).store.readDeliveries({})).map((r) => r.id);
}
