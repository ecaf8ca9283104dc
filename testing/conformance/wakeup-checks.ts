import assert from 'node:assert/strict';
import type { OutboxWakeup, WakeupListenContext } from '../../src/wakeups/wakeup.js';
import { newRunId, pause, pollUntil } from './support.js';

/*
 * The wakeup conformance checks, free of any test runner: each is a plain async function
 * that throws an `AssertionError` when the wakeup under test breaks the contract of
 * `OutboxWakeup`. `wakeupConformance()` (in `outboxkit/testing/conformance`) declares them
 * as a vitest suite; `runWakeupCheck()` runs one from anywhere.
 *
 * A check that must see a signal NOT arrive uses a second listener that does hear it as
 * its witness, so it waits no longer than the signal takes; only the close() check, which
 * has no listener left to be a witness, waits `quietMs`.
 */

/** A wakeup under test; made afresh for every check. */
export interface WakeupUnderTest {
  /** The wakeup, as `createOutbox({ wakeup })` would be given it. */
  readonly wakeup: OutboxWakeup;
  /** What the relay passes to `listen()`: the outbox database's connection settings. */
  readonly context: WakeupListenContext;
  /**
   * Send a signal the way a committed `fire()` would. Defaults to `wakeup.signal(topics)`.
   * A `notifyInWrite` wakeup is signalled by the write itself, so it must give one (for
   * `listenNotifyWakeup`: `SELECT pg_notify(channel, topic)` per topic on another connection).
   */
  send?(topics: readonly string[]): Promise<void>;
  /** Release what the factory opened. The suite has already called `wakeup.close()`. */
  cleanup?(): Promise<void>;
}

/** What a factory is told about the check it builds a wakeup for. */
export interface WakeupFactoryContext {
  /** Unique to this check's run: name the channel, topic or exchange with it. */
  readonly runId: string;
}

/** Builds a fresh wakeup under test for one check. */
export type WakeupFactory = (context: WakeupFactoryContext) => Promise<WakeupUnderTest>;

/** The ids of the wakeup checks; see {@link wakeupChecks} for what each asserts. */
export type WakeupCheckId =
  | 'declares-capabilities'
  | 'signal-reaches-listener'
  | 'two-listeners-hear-one-signal'
  | 'unsubscribed-listener-hears-nothing'
  | 'listens-again-after-the-last-left'
  | 'unsubscribe-is-idempotent'
  | 'throwing-listener-spares-the-others'
  | 'signal-never-throws'
  | 'close-stops-listening';

/** Tuning of the wakeup checks. */
export interface WakeupConformanceOptions {
  /**
   * Whether a signal names the topics written. A wakeup that cannot carry them (a bare
   * ping) sets `false`; its every signal must then be an empty list, which relays read
   * as "something was written". Either way a signal with an empty list is allowed (a
   * wakeup sends one when it may have missed signals, for example after a reconnect).
   * @defaultValue true
   */
  readonly carriesTopics?: boolean;
  /**
   * How long a signal may take to reach a listener, in milliseconds.
   * @defaultValue 5000
   */
  readonly signalWithinMs?: number;
  /**
   * How long the close() check watches for a signal that must not arrive, in milliseconds.
   * @defaultValue 200
   */
  readonly quietMs?: number;
  /** Checks not to run, each with the reason (shown as the skip note). */
  readonly skip?: Partial<Record<WakeupCheckId, string>>;
}

/** The options with their defaults filled in. */
export type ResolvedWakeupOptions = Required<Omit<WakeupConformanceOptions, 'skip'>> &
  Pick<WakeupConformanceOptions, 'skip'>;

/** One check: an id to refer to it, a title naming the behaviour, and the check itself. */
export interface WakeupCheck {
  readonly id: WakeupCheckId;
  readonly title: string;
  /** Run the check against the wakeup under test; throws when it does not hold. */
  run(subject: WakeupUnderTest, options: ResolvedWakeupOptions): Promise<void>;
}

/** Fill in the defaults of {@link WakeupConformanceOptions}. */
export function resolveWakeupOptions(
  options: WakeupConformanceOptions = {},
): ResolvedWakeupOptions {
  return {
    carriesTopics: options.carriesTopics ?? true,
    signalWithinMs: options.signalWithinMs ?? 5_000,
    quietMs: options.quietMs ?? 200,
    skip: options.skip,
  };
}

/** A listener that keeps what it heard. */
interface Ear {
  readonly heard: (readonly string[])[];
  readonly onSignal: (topics: readonly string[]) => void;
}

function ear(): Ear {
  const heard: (readonly string[])[] = [];
  return { heard, onSignal: (topics) => void heard.push([...topics]) };
}

/** Send as a committed write would: the factory's `send`, else `wakeup.signal`. */
async function send(subject: WakeupUnderTest, topics: readonly string[]): Promise<void> {
  if (subject.send) return subject.send(topics);
  if (subject.wakeup.capabilities.notifyInWrite)
    throw new Error(
      `wakeup "${subject.wakeup.name}" declares notifyInWrite: its signal is sent by the write, so the factory must give send(topics)`,
    );
  subject.wakeup.signal(topics);
}

/** Whether what `e` heard covers every topic of `topics` (any signal at all without topics). */
function hasHeard(e: Ear, topics: readonly string[], options: ResolvedWakeupOptions): boolean {
  if (!options.carriesTopics) return e.heard.length > 0;
  const heard = new Set(e.heard.flat());
  return topics.every((t) => heard.has(t));
}

/** Wait until `e` heard `topics`; fail naming `who` when it did not in time. */
async function untilHeard(
  e: Ear,
  topics: readonly string[],
  options: ResolvedWakeupOptions,
  who: string,
): Promise<void> {
  await pollUntil(
    () => e,
    (x) => hasHeard(x, topics, options),
    options.signalWithinMs,
  );
  assert.ok(
    hasHeard(e, topics, options),
    `${who} did not hear the signal for ${JSON.stringify(topics)} within ${options.signalWithinMs} ms (heard ${JSON.stringify(e.heard)})`,
  );
  assertWellFormed(e, topics, options, who);
}

/** Every signal names only topics that were sent (or none, for a topic-less wakeup). */
function assertWellFormed(
  e: Ear,
  sent: readonly string[],
  options: ResolvedWakeupOptions,
  who: string,
): void {
  for (const topics of e.heard) {
    assert.ok(Array.isArray(topics), `${who} was given ${JSON.stringify(topics)}, not a list`);
    if (options.carriesTopics)
      for (const topic of topics)
        assert.ok(
          sent.includes(topic),
          `${who} heard topic ${JSON.stringify(topic)}, which no signal named (sent ${JSON.stringify(sent)})`,
        );
    else
      assert.deepEqual(
        topics,
        [],
        `${who}: a wakeup that cannot carry topics must signal an empty list`,
      );
  }
}

/**
 * Every check a wakeup is held to, in the order the suite declares them. Each check gets
 * a fresh wakeup from the factory; the suite closes it afterwards.
 */
export const wakeupChecks: readonly WakeupCheck[] = [
  {
    id: 'declares-capabilities',
    title: 'declares its name and capabilities as data',
    async run({ wakeup }) {
      assert.equal(typeof wakeup.name, 'string', 'a wakeup has a name for logs');
      assert.ok(wakeup.name.length > 0, 'a wakeup has a non-empty name');
      const c = wakeup.capabilities;
      assert.ok(c && typeof c === 'object', 'a wakeup declares capabilities (an object)');
      if (c.notifyInWrite !== undefined)
        assert.ok(
          typeof c.notifyInWrite.channel === 'string' && c.notifyInWrite.channel.length > 0,
          'notifyInWrite names the channel the write notifies',
        );
      if (c.dialects !== undefined) {
        assert.ok(Array.isArray(c.dialects), 'dialects is a list of Sequelize dialect names');
        assert.ok(c.dialects.length > 0, 'dialects, when given, names at least one dialect');
        for (const d of c.dialects) assert.equal(typeof d, 'string', 'a dialect is a name');
      }
      // Data, not behaviour: what createOutbox reads must survive a structured clone.
      assert.deepEqual(structuredClone(c), c, 'capabilities are plain data');
    },
  },
  {
    id: 'signal-reaches-listener',
    title: 'a signal sent after listen() resolves reaches the listener, naming its topics',
    async run(subject, options) {
      const e = ear();
      const unsubscribe = await subject.wakeup.listen(e.onSignal, subject.context);
      assert.equal(typeof unsubscribe, 'function', 'listen() resolves to an unsubscribe function');
      const topics = ['conformance.OrderPlaced', 'conformance.OrderShipped'];
      await send(subject, topics);
      await untilHeard(e, topics, options, 'the listener');
      await unsubscribe();
    },
  },
  {
    id: 'two-listeners-hear-one-signal',
    title: 'two listeners both hear one signal',
    async run(subject, options) {
      const a = ear();
      const b = ear();
      const offA = await subject.wakeup.listen(a.onSignal, subject.context);
      const offB = await subject.wakeup.listen(b.onSignal, subject.context);
      const topics = ['conformance.OrderPlaced'];
      await send(subject, topics);
      await untilHeard(a, topics, options, 'the first listener');
      await untilHeard(b, topics, options, 'the second listener');
      await offA();
      await offB();
    },
  },
  {
    id: 'unsubscribed-listener-hears-nothing',
    title: 'a signal sent after unsubscribing does not reach the listener',
    async run(subject, options) {
      const gone = ear();
      const witness = ear();
      const offGone = await subject.wakeup.listen(gone.onSignal, subject.context);
      const offWitness = await subject.wakeup.listen(witness.onSignal, subject.context);
      await offGone();
      const topics = ['conformance.OrderPlaced'];
      await send(subject, topics);
      await untilHeard(witness, topics, options, 'the listener still subscribed');
      assert.deepEqual(gone.heard, [], 'the unsubscribed listener must hear nothing');
      await offWitness();
    },
  },
  {
    id: 'listens-again-after-the-last-left',
    title: 'after the last listener leaves, a new listener hears and the old one does not',
    async run(subject, options) {
      const first = ear();
      const offFirst = await subject.wakeup.listen(first.onSignal, subject.context);
      await send(subject, ['conformance.OrderPlaced']);
      await untilHeard(first, ['conformance.OrderPlaced'], options, 'the first listener');
      await offFirst();
      const heardBefore = first.heard.length;
      const second = ear();
      const offSecond = await subject.wakeup.listen(second.onSignal, subject.context);
      await send(subject, ['conformance.OrderShipped']);
      await untilHeard(second, ['conformance.OrderShipped'], options, 'the new listener');
      assert.equal(
        first.heard.length,
        heardBefore,
        `the listener that left must hear nothing more (heard ${JSON.stringify(first.heard)})`,
      );
      await offSecond();
    },
  },
  {
    id: 'unsubscribe-is-idempotent',
    title: 'unsubscribing twice is harmless and leaves other listeners subscribed',
    async run(subject, options) {
      const gone = ear();
      const stays = ear();
      const offGone = await subject.wakeup.listen(gone.onSignal, subject.context);
      const offStays = await subject.wakeup.listen(stays.onSignal, subject.context);
      await offGone();
      await offGone();
      await send(subject, ['conformance.OrderPlaced']);
      await untilHeard(
        stays,
        ['conformance.OrderPlaced'],
        options,
        'the listener still subscribed',
      );
      assert.deepEqual(gone.heard, [], 'the unsubscribed listener must hear nothing');
      await offStays();
    },
  },
  {
    id: 'throwing-listener-spares-the-others',
    title: 'a listener that throws does not keep the others from hearing the signal',
    async run(subject, options) {
      const thrower = (): void => {
        throw new Error('conformance: this listener throws');
      };
      const e = ear();
      const offThrower = await subject.wakeup.listen(thrower, subject.context);
      const offEar = await subject.wakeup.listen(e.onSignal, subject.context);
      await send(subject, ['conformance.OrderPlaced']);
      await untilHeard(
        e,
        ['conformance.OrderPlaced'],
        options,
        'the listener beside a throwing one',
      );
      await offThrower();
      await offEar();
    },
  },
  {
    id: 'signal-never-throws',
    title: 'signal() never throws, with or without listeners',
    async run(subject) {
      const { wakeup } = subject;
      assert.doesNotThrow(() => wakeup.signal(['conformance.OrderPlaced']), 'with no listener');
      assert.doesNotThrow(() => wakeup.signal([]), 'with no topics');
      const off = await wakeup.listen(() => {}, subject.context);
      assert.doesNotThrow(() => wakeup.signal(['conformance.OrderPlaced']), 'with a listener');
      await off();
      await wakeup.close();
      assert.doesNotThrow(() => wakeup.signal(['conformance.OrderPlaced']), 'after close()');
    },
  },
  {
    id: 'close-stops-listening',
    title: 'close() is idempotent and stops every listener',
    async run(subject, options) {
      const e = ear();
      const off = await subject.wakeup.listen(e.onSignal, subject.context);
      await subject.wakeup.close();
      await subject.wakeup.close();
      await send(subject, ['conformance.OrderPlaced']);
      await pause(options.quietMs);
      assert.deepEqual(e.heard, [], 'a listener of a closed wakeup must hear nothing');
      // The relay unsubscribes in its finally, which may come after the outbox was closed.
      await off();
    },
  },
];

/**
 * Run one check against a fresh wakeup from `factory`, closing it afterwards; rejects with
 * the check's assertion when the wakeup breaks the contract.
 */
export async function runWakeupCheck(
  id: WakeupCheckId,
  factory: WakeupFactory,
  options: WakeupConformanceOptions = {},
): Promise<void> {
  const check = wakeupChecks.find((c) => c.id === id);
  if (!check) throw new Error(`no wakeup check ${JSON.stringify(id)}`);
  const subject = await factory({ runId: newRunId() });
  try {
    await check.run(subject, resolveWakeupOptions(options));
  } finally {
    await closeWakeupSubject(subject);
  }
}

/** Close the wakeup and release the factory's resources, both even when one fails. */
export async function closeWakeupSubject(subject: WakeupUnderTest): Promise<void> {
  try {
    await subject.wakeup.close();
  } finally {
    await subject.cleanup?.();
  }
}
