/**
 * The bare SQL loops' statements, over outboxkit's own tables. The claim and the handler
 * acknowledgement are src/'s text, not copies (`postgresStatements(tableNames(…))`, as
 * `bench/explain.ts` uses them), so the loops pay exactly what the relay's statements cost
 * in PostgreSQL; the transport's mark and the producer's INSERT are written by hand: the
 * least any relay or `fire()` could send.
 */
import { postgresStatements } from '../../src/storage/postgres.js';
import { tableNames } from '../../src/storage/tables.js';

/** outboxkit's default table prefix (createOutbox without `tablePrefix`). */
const PREFIX = 'outbox_';

export interface BareStatements {
  /**
   * src/'s PostgreSQL claim: $1 worker, $2 claimed at, $3 lease until, $4 now, $5 ignore
   * backoff, $6 limit, $7 ids to leave out, $8 only these ids (NULL: any). Returns the
   * delivery columns and the event's (payload included), by event sequence.
   */
  readonly claim: string;
  /**
   * A batch delivered by a transport: one UPDATE by primary key, $1 the ids, $2 when.
   * No compare-and-set on the claim (the minimal mark; outboxkit's record checks it).
   */
  readonly markSucceeded: string;
  /** src/'s handler acknowledgement: $1 worker, $2 claimed at, $3 the row, $4 when. */
  readonly acknowledge: string;
  /**
   * The bare producer's write, one statement: one event row, its one delivery row (the
   * write-cost bench's `bare` statement) and a NOTIFY on $6 that PostgreSQL sends at
   * COMMIT. $1 uuid, $2 name, $3 payload, $4 now, $5 receiver key.
   */
  readonly insertAndNotify: string;
}

export function bareStatements(schema: string): BareStatements {
  const t = tableNames(PREFIX, schema);
  const src = postgresStatements(t, undefined);
  return {
    claim: src.claim,
    markSucceeded: `
      UPDATE ${t.deliveries}
      SET status = 'succeeded', attempts = attempts + 1, completed_at = $2, succeeded_at = $2, lease_until = NULL
      WHERE id = ANY($1::bigint[])`,
    acknowledge: src.acknowledge,
    insertAndNotify: `
      WITH e AS (
        INSERT INTO ${t.events} (uuid, name, version, payload, headers, occurred_at, recorded_at)
        VALUES ($1::uuid, $2::text, 1, $3::jsonb, '{}'::jsonb, $4, $4)
        RETURNING id
      ), d AS (
        INSERT INTO ${t.deliveries} (event_id, receiver_key, target, max_attempts, available_at)
        SELECT e.id, $5, '', 25, $4 FROM e
      )
      SELECT pg_notify($6, $2::text)`,
  };
}

/**
 * The claim's parameters, as src/ binds them (`SqlStore.claimBind`): claimed at `now`
 * (the acknowledgement's compare-and-set repeats it), a one-minute lease.
 */
export function claimValues(workerId: string, batchSize: number, now: Date): unknown[] {
  return [workerId, now, new Date(now.getTime() + 60_000), now, false, batchSize, [], null];
}

/** A claimed row, as the claim returns it (the columns the loops read). */
export interface ClaimedRow {
  readonly id: string;
  readonly event_payload: { readonly n: number };
}
