/**
 * A delivery row's PHASE: what its status means to the partial indexes of migration 4 —
 * `owed` (pending, failed or claimed: the queue), `dead` and `orphaned` (settled, but not
 * consumed), or nothing (succeeded, cancelled: history). The claim moves a row from
 * pending or failed to claimed and a lease renewal or a hand-back moves it within the
 * queue: none of them changes its phase, only a verdict does.
 *
 * That is the point of it. PostgreSQL writes an update without touching an index (a HOT
 * update, on the same heap page) only when no column any index names changed, and a
 * partial index's WHERE names its columns too; so while the claim's indexes were partial on
 * `status`, every claim rewrote the row into every index of the table (4 entries, ~300 B of
 * WAL per event, docs/storage.md). Indexed on the phase, the claim's UPDATE names no indexed
 * column and PostgreSQL makes it a HOT update: no index entry at all.
 *
 * How a dialect spells the phase ({@link PhaseSql}): PostgreSQL reads a column `phase`,
 * generated from `status` (`GENERATED ALWAYS AS … STORED`), so a `status` written by
 * anyone — the relay, an operator's SQL, a test — keeps it right; SQLite, which has no HOT
 * updates to gain and whose `ALTER TABLE … ADD COLUMN` has no `IF NOT EXISTS` (every
 * migration statement is idempotent), spells the same predicates on `status` itself. The
 * indexes and what they hold are the same on both (schema.ts, migration 4).
 */

/** The statuses of the `owed` phase: what the claim reads and the ordering check waits on. */
export const OWED_STATUSES = `'pending','failed','claimed'`;

/** The phase of a row, from its status: the generated column's expression. */
export const PHASE_OF_STATUS = `CASE WHEN status IN (${OWED_STATUSES}) THEN 'owed' WHEN status IN ('dead','orphaned') THEN status END`;

/**
 * The predicates on a delivery row's phase, each on the row aliased `row` (unqualified
 * when undefined: an index's WHERE). A query that should read one of migration 4's partial
 * indexes states that index's predicate with these, word for word.
 */
export interface PhaseSql {
  /** Pending, failed or claimed. */
  owed(row?: string): string;
  /** Not owed: succeeded, cancelled, dead or orphaned (history, and what keeps an event). */
  settled(row?: string): string;
  /** Owed or dead: what holds back the later events of its ordering key. */
  holdsBack(row?: string): string;
  /** A dead letter. */
  dead(row?: string): string;
  /** Dead or orphaned: what keeps an event under a `succeeded` retention. */
  lost(row?: string): string;
}

const col = (row: string | undefined, name: string) => (row ? `${row}.${name}` : name);

/** PostgreSQL: the generated `phase` column. */
export const PHASE_COLUMN: PhaseSql = {
  owed: (row) => `${col(row, 'phase')} = 'owed'`,
  settled: (row) => `${col(row, 'phase')} IS DISTINCT FROM 'owed'`,
  holdsBack: (row) => `${col(row, 'phase')} IN ('owed','dead')`,
  dead: (row) => `${col(row, 'phase')} = 'dead'`,
  lost: (row) => `${col(row, 'phase')} IN ('dead','orphaned')`,
};

/** SQLite: the same predicates on `status`. */
export const PHASE_OF_STATUS_SQL: PhaseSql = {
  owed: (row) => `${col(row, 'status')} IN (${OWED_STATUSES})`,
  settled: (row) => `${col(row, 'status')} NOT IN (${OWED_STATUSES})`,
  holdsBack: (row) => `${col(row, 'status')} IN (${OWED_STATUSES},'dead')`,
  dead: (row) => `${col(row, 'status')} = 'dead'`,
  lost: (row) => `${col(row, 'status')} IN ('dead','orphaned')`,
};
