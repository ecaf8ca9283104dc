/** Outbox-wide tuning, declared in `defineOutbox({ settings })`. Every field is optional. */
export interface OutboxSettings {
  /**
   * How long a claim leases its rows, in seconds (a claim stamps this plus 10 percent of
   * headroom). A relay that dies leaves its rows to be re-claimed when the lease lapses; a
   * live one renews it three times per lease.
   * @defaultValue 60
   */
  readonly leaseSeconds?: number;
  /**
   * How many deliveries one claim takes (1..10000). Every row of a batch is claimed under
   * one lease, so a slow receiver wants a batch it can work through inside it.
   * @defaultValue 100
   */
  readonly batchSize?: number;
  /**
   * How long an idle relay waits before polling again, in milliseconds. The poll is the
   * floor: a wakeup only removes latency, a lost one costs at most this.
   * @defaultValue 1000
   */
  readonly pollIntervalMs?: number;
  /** The default retry curve (full jitter, capped), overridable per receiver. */
  readonly backoff?: { readonly baseSeconds?: number; readonly capSeconds?: number };
  /**
   * The longest wait a receiver may ask for with `RetryAfter`, in seconds; a longer one is
   * clamped with a warning. Not the backoff cap, which bounds a guess: clamping a
   * destination's own one-hour Retry-After to it would hammer what asked to be left alone.
   * @defaultValue 86400
   */
  readonly maxRetryAfterSeconds?: number;
  /**
   * How long one delivery attempt may take, in seconds, unless the receiver says otherwise.
   * @defaultValue 30
   */
  readonly deliveryTimeoutSeconds?: number;
  /**
   * How many days `pruneEvents` keeps a settled event that declares no retention of its own.
   * @defaultValue 7
   */
  readonly retentionDays?: number;
}

/** {@link OutboxSettings} with every default filled in. */
export interface ResolvedSettings {
  readonly leaseSeconds: number;
  readonly batchSize: number;
  readonly pollIntervalMs: number;
  readonly backoff: { readonly baseSeconds: number; readonly capSeconds: number };
  readonly maxRetryAfterSeconds: number;
  readonly deliveryTimeoutSeconds: number;
  readonly retentionDays: number;
}

/** The defaults of {@link OutboxSettings}. */
export const DEFAULT_SETTINGS: ResolvedSettings = {
  leaseSeconds: 60,
  batchSize: 100,
  pollIntervalMs: 1000,
  backoff: { baseSeconds: 1, capSeconds: 3600 },
  maxRetryAfterSeconds: 86_400,
  deliveryTimeoutSeconds: 30,
  retentionDays: 7,
};
