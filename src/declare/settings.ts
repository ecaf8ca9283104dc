import type { PayloadCodecName } from './event.js';

/** Outbox-wide tuning, declared in `defineOutbox({ settings })`. Every field is optional. */
export interface OutboxSettings {
  /**
   * The payload codec of every event that names none (`event({ codec })`): `'json'`,
   * `'superjson'`, or a codec of your own declared in `defineOutbox({ codecs })`.
   * Captured topics always store the change envelope as JSON.
   * @defaultValue `'json'`
   */
  readonly codec?: PayloadCodecName;
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
  /**
   * How many rows one prune batch deletes at most, counting each event's delivery rows and
   * the event row itself, so one transaction's lock and write volume stay bounded however
   * the rows are spread (an event with more deliveries than this goes chunk by chunk).
   * Also what `cleanupDeadLettered` and `cleanupPublished` delete per batch.
   * @defaultValue 1000
   */
  readonly pruneBatchRows?: number;
  /**
   * Whether an idle relay prunes (`pruneEvents()` with its defaults, at most once per
   * {@link relayPruneSeconds}), so an event declared to be deleted once consumed goes
   * within minutes without a cron line. Off for a project that schedules the prune itself.
   * @defaultValue true
   */
  readonly relayPrune?: boolean;
  /**
   * The least time between two sweeps of one relay, in seconds, the first one this long
   * after the relay starts. The interval is what keeps N relays at N cheap queries per
   * interval; the prune's re-check at the delete is what keeps them from deleting twice.
   * @defaultValue 300
   */
  readonly relayPruneSeconds?: number;
  /**
   * How the outbox keeps tenants apart (docs/tenants.md). `'column'`: every event may name
   * a tenant (`fire(…, { tenant })`, or the `withTenant()` scope around the call), kept in
   * the events' `tenant` column; idempotency and ordering keys are unique per tenant, a
   * delivery's context names the tenant, and relays, health and the operator's operations
   * narrow by it. `'schema'` (PostgreSQL): each tenant's outbox tables live in a schema of
   * its own (`createOutbox({ tenantSchema })` names it, by default the tenant's own name), so
   * a tenant's events are written to its schema, in the caller's transaction, and can be
   * moved or dropped with it; every event needs a tenant, one relay serves a declared set of
   * schemas (`runRelay({ schemas })`) round robin, and `migrate({ schemas })` migrates them.
   * Refused by `createOutbox` on a database without schemas (SQLite, MariaDB).
   * `'none'`: no event names a tenant, and one given is refused.
   * @defaultValue 'none'
   */
  readonly tenancy?: Tenancy;
}

/**
 * How tenants are kept apart: not at all, by a column of the events, or by a schema per
 * tenant (PostgreSQL); see `settings.tenancy`.
 */
export type Tenancy = 'none' | 'column' | 'schema';

/** {@link OutboxSettings} with every default filled in. */
export interface ResolvedSettings {
  readonly codec: PayloadCodecName;
  readonly leaseSeconds: number;
  readonly batchSize: number;
  readonly pollIntervalMs: number;
  readonly backoff: { readonly baseSeconds: number; readonly capSeconds: number };
  readonly maxRetryAfterSeconds: number;
  readonly deliveryTimeoutSeconds: number;
  readonly retentionDays: number;
  readonly pruneBatchRows: number;
  readonly relayPrune: boolean;
  readonly relayPruneSeconds: number;
  readonly tenancy: Tenancy;
}

/** The defaults of {@link OutboxSettings}. */
export const DEFAULT_SETTINGS: ResolvedSettings = {
  codec: 'json',
  leaseSeconds: 60,
  batchSize: 100,
  pollIntervalMs: 1000,
  backoff: { baseSeconds: 1, capSeconds: 3600 },
  maxRetryAfterSeconds: 86_400,
  deliveryTimeoutSeconds: 30,
  retentionDays: 7,
  pruneBatchRows: 1000,
  relayPrune: true,
  relayPruneSeconds: 300,
  tenancy: 'none',
};
