/**
 * A way to tell idle relays that something was written, so they poll at once instead of
 * waiting out the poll interval.
 *
 * The poll stays the floor: a wakeup only removes latency, and a lost signal is harmless.
 * Signals are sent only after the writing transaction commits (never for a rollback), and
 * the signals of one transaction are coalesced into one.
 */
export interface OutboxWakeup {
  /** A name for logs. */
  readonly name: string;
  /**
   * A PostgreSQL channel to `NOTIFY` from inside the write's own statement, which
   * PostgreSQL delivers on commit. Only {@link listenNotifyWakeup} sets it.
   */
  readonly notifyChannel?: string;
  /** Send a signal naming the topics written; called after commit. Never throws. */
  signal(topics: readonly string[]): void;
  /**
   * Start listening; `onSignal` is called for every signal until the returned function is
   * called. Errors are retried with backoff by the wakeup itself.
   */
  listen(onSignal: (topics: readonly string[]) => void): Promise<() => Promise<void>>;
  /** Release whatever the wakeup opened. Idempotent. */
  close(): Promise<void>;
}
