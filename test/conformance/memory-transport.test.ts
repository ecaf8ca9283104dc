import { describe, expect, it } from 'vitest';
import type {
  DeliveryItem,
  DeliveryResult,
  OutboxDelivery,
  OutboxEvent,
} from '../../src/declare/types.js';
import {
  type ReceivedMessage,
  runTransportCheck,
  type TransportCheckId,
  type TransportFactory,
  type TransportUnderTest,
  transportConformance,
} from '../../testing/conformance/index.js';

/**
 * A destination in memory, behaving like a broker on the far side of a wire: what it holds
 * went through JSON, it can refuse everything, refuse some events, or hang until aborted.
 */
class MemoryDestination {
  readonly messages: ReceivedMessage[] = [];
  mode: 'up' | 'down' | 'stalled' = 'up';
  readonly refused = new Set<string>();
  /** A fault for the suite to catch: the wire loses the event's own headers. */
  dropsHeaders = false;

  async accept(event: OutboxEvent, signal: AbortSignal | undefined): Promise<void> {
    signal?.throwIfAborted();
    if (this.mode === 'down') throw new Error('memory destination: connection refused');
    if (this.mode === 'stalled') {
      await new Promise<never>((_, reject) => {
        if (!signal) return; // hangs for good: only a signal ends it
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    }
    await Promise.resolve(); // the round trip
    if (this.refused.has(event.id)) throw new Error(`memory destination: refused ${event.id}`);
    const wire = JSON.stringify({
      name: event.name,
      key: event.orderingKey,
      headers: { ...(this.dropsHeaders ? {} : event.headers), 'outbox-event-id': event.id },
      payload: event.payload,
    });
    const read = JSON.parse(wire);
    this.messages.push({
      eventId: read.headers['outbox-event-id'],
      name: read.name,
      payload: read.payload,
      headers: read.headers,
      orderingKey: read.key,
    });
  }
}

/** The reference batch transport: sends the items in order, one result each. */
function memoryBatchTransport(destination: MemoryDestination): OutboxDelivery {
  let closed = false;
  return {
    name: 'memory-batch',
    async deliverBatch(items, { signal }) {
      if (closed) throw new Error('memory-batch transport is closed');
      const results: DeliveryResult[] = [];
      for (const { event } of items) {
        if (signal.aborted) {
          results.push({ status: 'failed', error: signal.reason });
          continue;
        }
        try {
          await destination.accept(event, signal);
          results.push({ status: 'sent' });
        } catch (error) {
          results.push({ status: 'failed', error });
        }
      }
      return results;
    },
    async close() {
      closed = true;
    },
  };
}

/** The reference one-at-a-time transport. */
function memoryDeliverTransport(destination: MemoryDestination): OutboxDelivery {
  return {
    name: 'memory-deliver',
    async deliver(event, context) {
      await destination.accept(event, context.signal);
    },
  };
}

/** A factory over a fresh destination, with every hook the suite knows. */
function factoryOf(
  make: (destination: MemoryDestination) => OutboxDelivery,
  hooks = true,
): TransportFactory {
  return async () => {
    const destination = new MemoryDestination();
    const subject: TransportUnderTest = {
      transport: make(destination),
      received: async () => [...destination.messages],
    };
    if (!hooks) return subject;
    return {
      ...subject,
      async failDestination() {
        destination.mode = 'down';
      },
      async restoreDestination() {
        destination.mode = 'up';
      },
      async failEvents(ids) {
        for (const id of ids) destination.refused.add(id);
      },
      async stallDestination() {
        destination.mode = 'stalled';
      },
    };
  };
}

transportConformance('in-memory reference (deliverBatch)', factoryOf(memoryBatchTransport));
transportConformance('in-memory reference (deliver only)', factoryOf(memoryDeliverTransport));
transportConformance(
  'in-memory reference without the destination hooks',
  factoryOf(memoryBatchTransport, false),
);

describe('transport conformance: the checks catch a broken transport', () => {
  /** A transport that breaks one promise of the seam, and the check that must notice. */
  const broken: {
    readonly fault: string;
    readonly check: TransportCheckId;
    readonly message: RegExp;
    readonly make: (destination: MemoryDestination) => OutboxDelivery;
  }[] = [
    {
      fault: 'drops the last item of a batch but reports it sent',
      check: 'batch-delivers-every-item',
      message: /hold every sent event exactly once/,
      make: (d) => ({
        async deliverBatch(items, options) {
          await memoryBatchTransport(d).deliverBatch!(items.slice(0, -1), options);
          return undefined;
        },
      }),
    },
    {
      fault: 'returns one result fewer than the items',
      check: 'batch-delivers-every-item',
      message: /one result per item/,
      make: (d) => ({
        async deliverBatch(items, options) {
          const results = await memoryBatchTransport(d).deliverBatch!(items, options);
          return results!.slice(1);
        },
      }),
    },
    {
      fault: 'returns its results in reverse order',
      check: 'batch-results-in-item-order',
      message: /results must follow the items/,
      make: (d) => ({
        async deliverBatch(items, options) {
          const results = await memoryBatchTransport(d).deliverBatch!(items, options);
          return [...results!].reverse();
        },
      }),
    },
    {
      fault: 'holds back every item of an ordering key once one failed, whatever its target',
      check: 'order-is-per-receiver-and-target',
      message: /another fan-out target .* must still be sent/,
      make: (d) => ({
        async deliverBatch(items: readonly DeliveryItem[]) {
          const failedKeys = new Set<string>();
          const results: DeliveryResult[] = [];
          for (const { event } of items) {
            const key = event.orderingKey;
            if (key !== null && failedKeys.has(key)) {
              results.push({ status: 'failed', error: new Error('held back') });
              continue;
            }
            try {
              await d.accept(event, undefined);
              results.push({ status: 'sent' });
            } catch (error) {
              if (key !== null) failedKeys.add(key);
              results.push({ status: 'failed', error });
            }
          }
          return results;
        },
      }),
    },
    {
      fault: 'sends the items of a batch in reverse order',
      check: 'ordering-key-order',
      message: /must arrive in the order of the items/,
      make: (d) => ({
        async deliverBatch(items: readonly DeliveryItem[], options) {
          const results = await memoryBatchTransport(d).deliverBatch!(
            [...items].reverse(),
            options,
          );
          return [...results!].reverse();
        },
      }),
    },
    {
      fault: 'loses the headers',
      check: 'message-carries-the-event',
      message: /header x-trace-id must arrive unchanged/,
      make: (d) => {
        d.dropsHeaders = true;
        return memoryBatchTransport(d);
      },
    },
    {
      fault: 'sends although its signal was aborted',
      check: 'pre-aborted-call-ends-promptly',
      message: /reported item 0 as sent|resolved to undefined/,
      make: (d) => ({
        async deliverBatch(items) {
          return memoryBatchTransport(d).deliverBatch!(items, {
            signal: new AbortController().signal,
          });
        },
      }),
    },
    {
      fault: 'ignores the signal while the destination hangs',
      check: 'abort-while-sending-ends-promptly',
      message: /did not settle within 200 ms/,
      make: (d) => ({
        async deliverBatch(items) {
          // Passes no signal on: waits for the destination however long it takes.
          for (const { event } of items) await d.accept(event, undefined);
          return items.map(() => ({ status: 'sent' as const }));
        },
      }),
    },
    {
      fault: 'reports a refused send as sent',
      check: 'destination-failure-is-never-sent',
      message: /reported item 0 as sent/,
      make: (d) => ({
        async deliverBatch(items, options) {
          await memoryBatchTransport(d).deliverBatch!(items, options);
          return items.map(() => ({ status: 'sent' as const }));
        },
      }),
    },
    {
      fault: 'close() fails the second time',
      check: 'close-is-idempotent',
      message: /already closed/,
      make: (d) => {
        let closed = false;
        return {
          ...memoryBatchTransport(d),
          async close() {
            if (closed) throw new Error('already closed');
            closed = true;
          },
        };
      },
    },
  ];

  for (const { fault, check, message, make } of broken) {
    it(`a transport that ${fault} fails "${check}"`, async () => {
      await expect(
        runTransportCheck(check, factoryOf(make), {
          abortWithinMs: 200,
          attemptTimeoutMs: 200,
          receiveTimeoutMs: 200,
        }),
      ).rejects.toThrow(message);
    });
  }

  it('the same checks pass for the reference transport', async () => {
    for (const { check } of broken)
      await runTransportCheck(check, factoryOf(memoryBatchTransport), { abortWithinMs: 200 });
  });
});
