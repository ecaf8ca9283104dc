import assert from 'node:assert/strict';
import { v7 as uuidv7 } from 'uuid';
import type {
  DeliveryContext,
  DeliveryItem,
  DeliveryResult,
  JsonValue,
  OutboxDelivery,
  OutboxEvent,
} from '../../src/declare/types.js';
import { newRunId, pollUntil, type Settled, settlesWithin } from './support.js';

/*
 * The transport conformance checks, free of any test runner: each is a plain async
 * function that throws an `AssertionError` when the transport under test breaks the
 * contract of `OutboxDelivery`. `transportConformance()` (in `outboxkit/testing/conformance`)
 * declares them as a vitest suite; `runTransportCheck()` runs one from anywhere.
 */

/** One message as the destination holds it, read back the way a consumer would read it. */
export interface ReceivedMessage {
  /** The event's id as the consumer finds it (what it deduplicates on). */
  readonly eventId: string;
  /** The event's name, which is also its topic, as the destination carries it. */
  readonly name: string;
  /** The payload, decoded back from the wire. */
  readonly payload: unknown;
  /**
   * The message's headers, decoded back from the wire. May hold more than the event's
   * own (the transport's, such as `outbox-event-id`); every header of the event must be there.
   */
  readonly headers: Readonly<Record<string, unknown>>;
  /** The ordering key the destination partitions by (Kafka key, stream, group), or `null`. */
  readonly orderingKey: string | null;
}

/** A transport under test and a view of its destination; made afresh for every check. */
export interface TransportUnderTest {
  /** The transport, as a receiver's `deliver` would be given it. */
  readonly transport: OutboxDelivery;
  /**
   * Everything the destination holds from this run, in the order a consumer reads it (for
   * one ordering key at least: a partition, a stream, a queue). Scope it to the run: a
   * topic, queue or stream named with the `runId` the factory was given.
   */
  received(): Promise<readonly ReceivedMessage[]>;
  /**
   * Make the destination refuse or be unreachable for everything sent from now on (a 500,
   * a closed port, a deleted queue). Without it the destination-failure checks are skipped.
   */
  failDestination?(): Promise<void>;
  /** Undo {@link failDestination}; with both, the check that sending resumes runs. */
  restoreDestination?(): Promise<void>;
  /**
   * Make the destination refuse only the events with these ids (a webhook answering 500
   * for them). Without it the check of per-item results in item order is skipped.
   */
  failEvents?(eventIds: readonly string[]): Promise<void>;
  /**
   * Make sends hang without an answer until they are aborted (a server that accepts the
   * connection and never replies). Without it the abort-while-sending check is skipped.
   */
  stallDestination?(): Promise<void>;
  /** Release what the factory opened. The suite has already called `transport.close()`. */
  cleanup?(): Promise<void>;
}

/** What a factory is told about the check it builds a transport for. */
export interface TransportFactoryContext {
  /** Unique to this check's run: name the topic, queue, stream or URL path with it. */
  readonly runId: string;
  /** The event names the checks send ({@link CONFORMANCE_EVENT_NAMES}). */
  readonly eventNames: readonly string[];
}

/** Builds a fresh transport under test for one check. */
export type TransportFactory = (context: TransportFactoryContext) => Promise<TransportUnderTest>;

/** The ids of the transport checks; see {@link transportChecks} for what each asserts. */
export type TransportCheckId =
  | 'implements-a-send'
  | 'batch-delivers-every-item'
  | 'batch-results-in-item-order'
  | 'order-is-per-receiver-and-target'
  | 'message-carries-the-event'
  | 'ordering-key-order'
  | 'deliver-sends-one'
  | 'pre-aborted-call-ends-promptly'
  | 'abort-while-sending-ends-promptly'
  | 'destination-failure-is-never-sent'
  | 'sends-again-after-failure'
  | 'close-is-idempotent'
  | 'close-without-sending';

/** Tuning of the transport checks. */
export interface TransportConformanceOptions {
  /**
   * How long a sent message may take to show up in `received()`, in milliseconds.
   * @defaultValue 5000
   */
  readonly receiveTimeoutMs?: number;
  /**
   * How soon a call must settle once its signal is aborted, in milliseconds: a stop or a
   * timeout must not wait out a hanging send.
   * @defaultValue 2000
   */
  readonly abortWithinMs?: number;
  /**
   * The attempt's time limit while the destination fails, in milliseconds: the check's
   * signal aborts then, as the relay's would, and the call must settle soon after.
   * @defaultValue 5000
   */
  readonly attemptTimeoutMs?: number;
  /**
   * The header a consumer reads the event id from, checked to equal the id; `null` when
   * the transport carries the id some other way (a message id).
   * @defaultValue `'outbox-event-id'`
   */
  readonly eventIdHeader?: string | null;
  /**
   * Checks not to run, each with the reason (shown as the skip note). Use sparingly: a
   * skipped check is a behaviour the transport does not promise.
   */
  readonly skip?: Partial<Record<TransportCheckId, string>>;
}

/** The options with their defaults filled in. */
export type ResolvedTransportOptions = Required<Omit<TransportConformanceOptions, 'skip'>> &
  Pick<TransportConformanceOptions, 'skip'>;

/** One check: an id to refer to it, a title naming the behaviour, and the check itself. */
export interface TransportCheck {
  readonly id: TransportCheckId;
  readonly title: string;
  /** Why the check does not apply to this transport (a missing hook or method), if so. */
  notApplicable?(subject: TransportUnderTest): string | undefined;
  /** Run the check against the transport under test; throws when it does not hold. */
  run(subject: TransportUnderTest, options: ResolvedTransportOptions): Promise<void>;
}

/** The event names every check sends, so a factory can create their topics up front. */
export const CONFORMANCE_EVENT_NAMES: readonly string[] = [
  'conformance.OrderPlaced',
  'conformance.OrderShipped',
];

/** Fill in the defaults of {@link TransportConformanceOptions}. */
export function resolveTransportOptions(
  options: TransportConformanceOptions = {},
): ResolvedTransportOptions {
  return {
    receiveTimeoutMs: options.receiveTimeoutMs ?? 5_000,
    abortWithinMs: options.abortWithinMs ?? 2_000,
    attemptTimeoutMs: options.attemptTimeoutMs ?? 5_000,
    eventIdHeader: options.eventIdHeader === undefined ? 'outbox-event-id' : options.eventIdHeader,
    skip: options.skip,
  };
}

let sequence = 0;

/** A recorded event as the relay would hand it over; fields may be overridden. */
export function conformanceEvent(overrides: Partial<OutboxEvent> = {}): OutboxEvent {
  sequence += 1;
  const at = new Date();
  return {
    id: uuidv7(),
    sequence: String(sequence),
    name: CONFORMANCE_EVENT_NAMES[0],
    version: 1,
    payload: { n: sequence },
    headers: { 'x-conformance-run': 'transport' },
    orderingKey: null,
    idempotencyKey: null,
    occurredAt: at,
    recordedAt: at,
    actor: null,
    correlationId: null,
    causedBy: null,
    ...overrides,
  };
}

/** Items for `events`, each with a delivery context as the relay builds it. */
export function conformanceItems(
  events: readonly OutboxEvent[],
  signal?: AbortSignal,
): DeliveryItem[] {
  return events.map((event, i) => ({
    event,
    context: conformanceContext(i, signal),
  }));
}

function conformanceContext(i: number, signal?: AbortSignal): DeliveryContext {
  return {
    receiverKey: 'conformance.transport',
    deliveryId: String(1_000 + i),
    attempt: 1,
    target: '',
    dueAt: null,
    signal,
  };
}

/** The results a call reported, or `undefined` when it resolved to nothing (all sent). */
type CallResults = readonly DeliveryResult[] | undefined;

/**
 * Send `items` the way the relay would: one `deliverBatch` call when the transport has
 * one, else `deliver` one item after the other (a throw is that item's failure).
 */
async function sendAsRelay(
  transport: OutboxDelivery,
  items: readonly DeliveryItem[],
  signal: AbortSignal,
): Promise<CallResults> {
  if (transport.deliverBatch) return transport.deliverBatch(items, { signal });
  const results: DeliveryResult[] = [];
  for (const item of items) {
    try {
      await transport.deliver!(item.event, { ...item.context, signal });
      results.push({ status: 'sent' });
    } catch (error) {
      results.push({ status: 'failed', error });
    }
  }
  return results;
}

/** Assert `results` is nothing or one well-formed result per item, and return them. */
function checkResultShape(results: CallResults, count: number): readonly DeliveryResult[] {
  if (results === undefined) return Array.from({ length: count }, () => ({ status: 'sent' }));
  assert.ok(
    Array.isArray(results),
    `deliverBatch must resolve to an array of results or to undefined (got ${typeof results})`,
  );
  assert.equal(
    results.length,
    count,
    `deliverBatch must resolve to one result per item (${count} items, got ${results.length} results)`,
  );
  results.forEach((result, i) => {
    assert.ok(
      result && ['sent', 'failed', 'retryAfter'].includes(result.status),
      `result ${i} must have status 'sent', 'failed' or 'retryAfter' (got ${JSON.stringify(result)})`,
    );
    if (result.status === 'failed')
      assert.ok('error' in result, `failed result ${i} must carry its error`);
    if (result.status === 'retryAfter')
      assert.ok(
        Number.isFinite(result.seconds) && result.seconds >= 0,
        `retryAfter result ${i} must give a finite number of seconds ≥ 0 (got ${result.seconds})`,
      );
  });
  return results;
}

/** Wait until the destination holds every id in `ids`; returns what it holds. */
function receivedAll(subject: TransportUnderTest, ids: readonly string[], timeoutMs: number) {
  return pollUntil(
    () => subject.received(),
    (messages) => {
      const seen = new Set(messages.map((m) => m.eventId));
      return ids.every((id) => seen.has(id));
    },
    timeoutMs,
  );
}

/** Assert the destination holds each of `events` exactly once and nothing else. */
function assertHoldsExactly(messages: readonly ReceivedMessage[], events: readonly OutboxEvent[]) {
  assert.deepEqual(
    messages.map((m) => m.eventId).sort(),
    events.map((e) => e.id).sort(),
    'the destination must hold every sent event exactly once, and nothing else',
  );
}

/** Assert a call that ended early said so: a rejection, or results none of which is `sent`. */
function assertNotSent(outcome: Settled<CallResults>, count: number, what: string) {
  if (outcome.status === 'rejected') return;
  assert.notEqual(
    outcome.value,
    undefined,
    `${what} resolved to undefined, which means every item was sent`,
  );
  const results = checkResultShape(outcome.value, count);
  results.forEach((result, i) => {
    assert.notEqual(result.status, 'sent', `${what} reported item ${i} as sent`);
  });
}

/** An AbortSignal that aborts after `ms`, with the relay's kind of reason, and its disposal. */
function attemptSignal(ms: number) {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new Error(`conformance: the attempt timed out after ${ms} ms`)),
    ms,
  );
  return { signal: controller.signal, dispose: () => clearTimeout(timer) };
}

const never = new AbortController().signal;
const hasBatch = (s: TransportUnderTest) =>
  s.transport.deliverBatch ? undefined : 'the transport has no deliverBatch';
const hasDeliver = (s: TransportUnderTest) =>
  s.transport.deliver ? undefined : 'the transport has no deliver';

/**
 * Every check a transport is held to, in the order the suite declares them. Each check
 * gets a fresh transport from the factory; the suite closes it afterwards.
 */
export const transportChecks: readonly TransportCheck[] = [
  {
    id: 'implements-a-send',
    title: 'implements deliver or deliverBatch',
    async run({ transport }) {
      assert.ok(
        typeof transport.deliver === 'function' || typeof transport.deliverBatch === 'function',
        'an OutboxDelivery must implement deliver(event, context) or deliverBatch(items, { signal })',
      );
    },
  },
  {
    id: 'batch-delivers-every-item',
    title: 'deliverBatch delivers every item and resolves to one result per item (or undefined)',
    notApplicable: hasBatch,
    async run(subject, options) {
      const events = [
        conformanceEvent({ orderingKey: 'order-1' }),
        conformanceEvent({ orderingKey: 'order-2', name: CONFORMANCE_EVENT_NAMES[1] }),
        conformanceEvent({ orderingKey: 'order-1', name: CONFORMANCE_EVENT_NAMES[1] }),
        conformanceEvent({ orderingKey: null }),
        conformanceEvent({ orderingKey: 'order-3' }),
      ];
      const results = checkResultShape(
        await subject.transport.deliverBatch!(conformanceItems(events, never), { signal: never }),
        events.length,
      );
      results.forEach((result, i) => {
        assert.equal(result.status, 'sent', `item ${i} of a healthy destination was not sent`);
      });
      const messages = await receivedAll(
        subject,
        events.map((e) => e.id),
        options.receiveTimeoutMs,
      );
      assertHoldsExactly(messages, events);
    },
  },
  {
    id: 'batch-results-in-item-order',
    title: "deliverBatch reports each item's own result, in item order",
    notApplicable: (s) =>
      hasBatch(s) ?? (s.failEvents ? undefined : 'the factory gives no failEvents hook'),
    async run(subject, options) {
      const events = Array.from({ length: 6 }, (_, i) =>
        conformanceEvent({ orderingKey: `order-${i}` }),
      );
      const refused = new Set([events[0].id, events[2].id]);
      await subject.failEvents!([...refused]);
      const results = checkResultShape(
        await subject.transport.deliverBatch!(conformanceItems(events, never), { signal: never }),
        events.length,
      );
      assert.deepEqual(
        results.map((r) => (r.status === 'sent' ? 'sent' : 'not sent')),
        events.map((e) => (refused.has(e.id) ? 'not sent' : 'sent')),
        'results must follow the items: the refused items (0 and 2) not sent, the others sent',
      );
      const sent = events.filter((e) => !refused.has(e.id));
      const messages = await receivedAll(
        subject,
        sent.map((e) => e.id),
        options.receiveTimeoutMs,
      );
      assertHoldsExactly(messages, sent);
    },
  },
  {
    id: 'order-is-per-receiver-and-target',
    title:
      'a failed item holds back nothing of another fan-out target or receiver, even of its ordering key',
    notApplicable: (s) =>
      hasBatch(s) ?? (s.failEvents ? undefined : 'the factory gives no failEvents hook'),
    async run(subject, options) {
      // The relay's rows keep order per (receiver, target, ordering key): the claim hands a
      // batch at most one row of each, so a batch's items of one ordering key but another
      // target or receiver are independent. A transport holding them back behind a failed
      // item would dead-letter a healthy sibling that was never sent.
      const failing = conformanceEvent({ orderingKey: 'order-f' });
      const siblings = [
        conformanceEvent({ orderingKey: 'order-f' }),
        conformanceEvent({ orderingKey: 'order-f' }),
      ];
      await subject.failEvents!([failing.id]);
      const [first, second, third] = conformanceItems([failing, ...siblings], never);
      const items: DeliveryItem[] = [
        { event: first.event, context: { ...first.context, target: 'warehouse' } },
        { event: second.event, context: { ...second.context, target: 'crm' } },
        {
          event: third.event,
          context: { ...third.context, receiverKey: 'conformance.other', target: 'warehouse' },
        },
      ];
      const results = checkResultShape(
        await subject.transport.deliverBatch!(items, { signal: never }),
        items.length,
      );
      assert.notEqual(results[0].status, 'sent', 'the refused item must not be reported sent');
      assert.equal(
        results[1].status,
        'sent',
        "an item of another fan-out target with the failed item's ordering key must still be sent",
      );
      assert.equal(
        results[2].status,
        'sent',
        "an item of another receiver with the failed item's ordering key must still be sent",
      );
      const messages = await receivedAll(
        subject,
        siblings.map((e) => e.id),
        options.receiveTimeoutMs,
      );
      assertHoldsExactly(messages, siblings);
    },
  },
  {
    id: 'message-carries-the-event',
    title:
      'a delivered message carries the event id, name, payload, headers and ordering key intact',
    async run(subject, options) {
      const payload: JsonValue = {
        orderId: 'ord_42',
        total: 1999.5,
        paid: true,
        coupon: null,
        lines: [
          { sku: 'TEA-1', qty: 2 },
          { sku: 'MUG-9', qty: 1 },
        ],
        note: 'ünïcödé ✓ — "quoted" \\ back\nslash 😀',
      };
      const event = conformanceEvent({
        name: CONFORMANCE_EVENT_NAMES[1],
        payload,
        headers: { 'x-trace-id': '4bf92f3577b34da6a3ce929d0e0e4736', 'x-author': 'Zoë ✓' },
        orderingKey: 'order-42',
      });
      const results = checkResultShape(
        await sendAsRelay(subject.transport, conformanceItems([event], never), never),
        1,
      );
      assert.equal(results[0].status, 'sent', 'a healthy destination must take the event');
      const messages = await receivedAll(subject, [event.id], options.receiveTimeoutMs);
      const message = messages.find((m) => m.eventId === event.id);
      assert.ok(message, `the destination must hold event ${event.id}`);
      assert.equal(message.name, event.name, 'the message must carry the event name (its topic)');
      assert.deepEqual(message.payload, payload, 'the payload must arrive unchanged');
      for (const [header, value] of Object.entries(event.headers))
        assert.deepEqual(message.headers[header], value, `header ${header} must arrive unchanged`);
      if (options.eventIdHeader !== null)
        assert.equal(
          message.headers[options.eventIdHeader],
          event.id,
          `the event id must travel in the ${options.eventIdHeader} header, which consumers deduplicate on`,
        );
      assert.equal(message.orderingKey, event.orderingKey, 'the ordering key must arrive');
    },
  },
  {
    id: 'ordering-key-order',
    title: 'items of one ordering key arrive in item order',
    async run(subject, options) {
      const keys = ['order-a', 'order-b', 'order-a', 'order-a', 'order-b', 'order-a', 'order-b'];
      const events = keys.map((orderingKey, i) =>
        conformanceEvent({ orderingKey, payload: { step: i } }),
      );
      const results = checkResultShape(
        await sendAsRelay(subject.transport, conformanceItems(events, never), never),
        events.length,
      );
      results.forEach((r, i) => {
        assert.equal(r.status, 'sent', `item ${i} of a healthy destination was not sent`);
      });
      const messages = await receivedAll(
        subject,
        events.map((e) => e.id),
        options.receiveTimeoutMs,
      );
      for (const key of new Set(keys)) {
        assert.deepEqual(
          messages
            .filter((m) => events.some((e) => e.id === m.eventId && e.orderingKey === key))
            .map((m) => m.eventId),
          events.filter((e) => e.orderingKey === key).map((e) => e.id),
          `the events of ordering key ${key} must arrive in the order of the items`,
        );
      }
    },
  },
  {
    id: 'deliver-sends-one',
    title: 'deliver() sends one event and resolves',
    notApplicable: hasDeliver,
    async run(subject, options) {
      const event = conformanceEvent({ orderingKey: 'order-7' });
      const [item] = conformanceItems([event], never);
      const returned = await subject.transport.deliver!(event, item.context);
      assert.equal(returned, undefined, 'deliver() resolves to nothing');
      const messages = await receivedAll(subject, [event.id], options.receiveTimeoutMs);
      assertHoldsExactly(messages, [event]);
    },
  },
  {
    id: 'pre-aborted-call-ends-promptly',
    title: 'a call whose signal is already aborted ends promptly and reports nothing as sent',
    async run(subject, options) {
      const controller = new AbortController();
      controller.abort(new Error('conformance: the relay is stopping'));
      const { signal } = controller;
      if (subject.transport.deliverBatch) {
        const events = [conformanceEvent(), conformanceEvent()];
        const outcome = await settlesWithin(
          subject.transport.deliverBatch(conformanceItems(events, signal), { signal }),
          options.abortWithinMs,
          'deliverBatch with an aborted signal',
        );
        assertNotSent(outcome, events.length, 'deliverBatch with an aborted signal');
      }
      if (subject.transport.deliver) {
        const event = conformanceEvent();
        const [item] = conformanceItems([event], signal);
        const outcome = await settlesWithin(
          subject.transport.deliver(event, item.context),
          options.abortWithinMs,
          'deliver with an aborted signal',
        );
        assert.equal(
          outcome.status,
          'rejected',
          'deliver with an aborted signal must reject: resolving says the event went',
        );
      }
    },
  },
  {
    id: 'abort-while-sending-ends-promptly',
    title: 'a call aborted while sending ends promptly and reports nothing as sent',
    notApplicable: (s) =>
      s.stallDestination ? undefined : 'the factory gives no stallDestination hook',
    async run(subject, options) {
      await subject.stallDestination!();
      const methods: ('deliverBatch' | 'deliver')[] = [];
      if (subject.transport.deliverBatch) methods.push('deliverBatch');
      if (subject.transport.deliver) methods.push('deliver');
      for (const method of methods) {
        const controller = new AbortController();
        const { signal } = controller;
        const events = [conformanceEvent(), conformanceEvent()];
        const items = conformanceItems(events, signal);
        const call: Promise<CallResults> =
          method === 'deliverBatch'
            ? subject.transport.deliverBatch!(items, { signal })
            : subject.transport.deliver!(items[0].event, items[0].context).then(() => [
                { status: 'sent' } as const,
              ]);
        // Let the send get under way (connect, write) before the stop arrives.
        await new Promise((resolve) => setTimeout(resolve, 20));
        controller.abort(new Error('conformance: the attempt timed out'));
        const outcome = await settlesWithin(
          call,
          options.abortWithinMs,
          `${method} aborted while sending`,
        );
        assertNotSent(
          outcome,
          method === 'deliverBatch' ? events.length : 1,
          `${method} aborted while sending`,
        );
      }
    },
  },
  {
    id: 'destination-failure-is-never-sent',
    title: 'a destination failure surfaces as a failed result or a throw, never as sent',
    notApplicable: (s) =>
      s.failDestination ? undefined : 'the factory gives no failDestination hook',
    async run(subject, options) {
      await subject.failDestination!();
      const bound = options.attemptTimeoutMs + options.abortWithinMs;
      if (subject.transport.deliverBatch) {
        const attempt = attemptSignal(options.attemptTimeoutMs);
        try {
          const events = [conformanceEvent(), conformanceEvent({ orderingKey: 'order-9' })];
          const outcome = await settlesWithin(
            subject.transport.deliverBatch(conformanceItems(events, attempt.signal), {
              signal: attempt.signal,
            }),
            bound,
            'deliverBatch to a failing destination',
          );
          assertNotSent(outcome, events.length, 'deliverBatch to a failing destination');
        } finally {
          attempt.dispose();
        }
      }
      if (subject.transport.deliver) {
        const attempt = attemptSignal(options.attemptTimeoutMs);
        try {
          const event = conformanceEvent();
          const [item] = conformanceItems([event], attempt.signal);
          const outcome = await settlesWithin(
            subject.transport.deliver(event, item.context),
            bound,
            'deliver to a failing destination',
          );
          assert.equal(outcome.status, 'rejected', 'deliver to a failing destination must reject');
        } finally {
          attempt.dispose();
        }
      }
    },
  },
  {
    id: 'sends-again-after-failure',
    title: 'sends again once the destination is back',
    notApplicable: (s) =>
      s.failDestination && s.restoreDestination
        ? undefined
        : 'the factory gives no failDestination and restoreDestination hooks',
    async run(subject, options) {
      await subject.failDestination!();
      const attempt = attemptSignal(options.attemptTimeoutMs);
      try {
        await settlesWithin(
          sendAsRelay(
            subject.transport,
            conformanceItems([conformanceEvent()], attempt.signal),
            attempt.signal,
          ),
          options.attemptTimeoutMs + options.abortWithinMs,
          'a send to a failing destination',
        );
      } finally {
        attempt.dispose();
      }
      await subject.restoreDestination!();
      const events = [conformanceEvent({ orderingKey: 'order-5' }), conformanceEvent()];
      const results = checkResultShape(
        await sendAsRelay(subject.transport, conformanceItems(events, never), never),
        events.length,
      );
      results.forEach((r, i) => {
        assert.equal(r.status, 'sent', `item ${i} was not sent once the destination was back`);
      });
      const messages = await receivedAll(
        subject,
        events.map((e) => e.id),
        options.receiveTimeoutMs,
      );
      for (const event of events)
        assert.ok(
          messages.some((m) => m.eventId === event.id),
          `event ${event.id} sent after the destination came back must arrive`,
        );
    },
  },
  {
    id: 'close-is-idempotent',
    title: 'close() after sending is idempotent',
    async run(subject) {
      const event = conformanceEvent();
      await sendAsRelay(subject.transport, conformanceItems([event], never), never);
      await subject.transport.close?.();
      await subject.transport.close?.();
    },
  },
  {
    id: 'close-without-sending',
    title: 'close() of a transport that never sent resolves',
    async run(subject) {
      await subject.transport.close?.();
      await subject.transport.close?.();
    },
  },
];

/**
 * Run one check against a fresh transport from `factory`, closing it afterwards; rejects
 * with the check's assertion when the transport breaks the contract, and with a note when
 * the check does not apply.
 */
export async function runTransportCheck(
  id: TransportCheckId,
  factory: TransportFactory,
  options: TransportConformanceOptions = {},
): Promise<void> {
  const check = transportChecks.find((c) => c.id === id);
  if (!check) throw new Error(`no transport check ${JSON.stringify(id)}`);
  const subject = await factory({ runId: newRunId(), eventNames: CONFORMANCE_EVENT_NAMES });
  try {
    const reason = check.notApplicable?.(subject);
    if (reason) throw new Error(`transport check "${check.title}" does not apply: ${reason}`);
    await check.run(subject, resolveTransportOptions(options));
  } finally {
    await closeSubject(subject);
  }
}

/** Close the transport and release the factory's resources, both even when one fails. */
export async function closeSubject(subject: TransportUnderTest): Promise<void> {
  try {
    await subject.transport.close?.();
  } finally {
    await subject.cleanup?.();
  }
}
