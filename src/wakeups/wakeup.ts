import type { OutboxLogger } from '../observe/logger.js';
/**
 * What a wakeup needs and does, as data, so `createOutbox` can refuse a wakeup the
 * database cannot serve before anything is written, and `fire()` and the store know who
 * sends the signal.
 */
export interface WakeupCapabilities {
  /**
   * The signal rides inside `fire()`'s own write: PostgreSQL's `NOTIFY` on this channel,
   * which the server sends exactly when the transaction commits and never for a rollback.
   * `fire()` then sends nothing after commit. Needs a store that can notify in its write
   * (PostgreSQL).
   */
  readonly notifyInWrite?: {
    readonly channel: string;
    /**
     * At most one NOTIFY per this many milliseconds from one outbox instance, the rest
     * folded into a trailing one (see `listenNotifyWakeup({ notifyCoalesceMs })`); none
     * when omitted or 0.
     */
    readonly coalesceMs?: number;
  };
  /**
   * The dialects the wakeup can serve (Sequelize's names: `postgres`, `sqlite`, …);
   * any when omitted.
   */
  readonly dialects?: readonly string[];
}

/** Connection settings of the outbox's database, for a wakeup that opens its own listener. */
export interface WakeupConnection {
  readonly dialect: string;
  readonly host?: string;
  readonly port?: number;
  readonly user?: string;
  readonly password?: string;
  readonly database?: string;
}

/** What `listen()` is told about the outbox it listens for. */
export interface WakeupListenContext {
  /** The outbox database's connection settings (a wakeup may use its own instead). */
  readonly connection: WakeupConnection;
  /**
   * The outbox's logger (`createOutbox({ logger })`): where a wakeup that was given no
   * logger of its own reports its reconnects and its listeners' failures, so they land in
   * the app's log with everything else rather than on the console.
   */
  readonly logger?: OutboxLogger;
}

/**
 * A way to tell idle relays that something was written, so they poll at once instead of
 * waiting out the poll interval.
 *
 * The poll stays the floor: a wakeup only removes latency, and a lost signal is harmless.
 * Signals are sent only after the writing transaction commits (never for a rollback), and
 * the signals of one transaction are coalesced into one. `testing/` has a conformance suite
 * (`wakeupConformance`) every wakeup runs.
 */
export interface OutboxWakeup {
  /** A name for logs. */
  readonly name: string;
  /** What it needs and how its signal travels; see {@link WakeupCapabilities}. */
  readonly capabilities: WakeupCapabilities;
  /**
   * Send a signal naming the topics written; called once the outermost transaction has
   * really committed (not for a `notifyInWrite` wakeup). Never throws.
   */
  signal(topics: readonly string[]): void;
  /**
   * Start listening; `onSignal` is called for every signal until the returned function is
   * called. Errors are retried with backoff by the wakeup itself.
   */
  listen(
    onSignal: (topics: readonly string[]) => void,
    context: WakeupListenContext,
  ): Promise<() => Promise<void>>;
  /** Release whatever the wakeup opened. Idempotent. */
  close(): Promise<void>;
}
