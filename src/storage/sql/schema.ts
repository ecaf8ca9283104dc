/**
 * The schema, described once as data and rendered per dialect: each numbered migration
 * lists the tables and indexes it creates, with logical column types that a
 * {@link DdlDialect} spells (`timestamp` is timestamptz on PostgreSQL, epoch milliseconds
 * as INTEGER on SQLite). Every statement rendered is `IF NOT EXISTS`, so each is
 * idempotent on its own. A migration never changes once released: a later change is a new
 * version.
 */
import { quoteIdent, type TableNames } from '../tables.js';
import { HOLDS_BACK, LOST, OWED, READY } from './conditions.js';
import type { ColumnDefault, ColumnType, DdlDialect } from './dialect.js';
import type { PhaseSql } from './phase.js';

/** The outbox's tables, by their key in {@link TableNames}. */
export type TableKey = 'events' | 'deliveries' | 'lastSuccess' | 'migrations' | 'relayLock';

export interface ColumnSpec {
  readonly name: string;
  readonly type: ColumnType;
  readonly primaryKey?: true;
  readonly notNull?: true;
  readonly unique?: true;
  readonly default?: ColumnDefault;
  readonly check?: string;
}

export interface TableSpec {
  readonly table: TableKey;
  readonly columns: readonly ColumnSpec[];
  /** Created only by a dialect with a single-writer lock (SQLite's relay lock). */
  readonly onlyWithSingleWriterLock?: true;
}

export interface IndexSpec {
  /** The index name, after the table prefix. */
  readonly name: string;
  readonly table: TableKey;
  readonly columns: readonly string[];
  /**
   * A partial index's condition (dropped by a dialect without partial indexes): a text, or
   * one written on the delivery row's phase, which each dialect spells (sql/phase.ts).
   */
  readonly where?: string | ((phase: PhaseSql) => string);
  readonly unique?: true;
}

export interface Migration {
  readonly version: number;
  readonly tables: readonly TableSpec[];
  readonly indexes: readonly IndexSpec[];
  /**
   * Indexes of an earlier migration this one replaces (names after the table prefix),
   * dropped `IF EXISTS` after its own are built, so a claim always has one of them.
   */
  readonly dropIndexes?: readonly string[];
  /** Give the deliveries table the column its phase is read from, where the dialect has one. */
  readonly phaseColumn?: true;
  /**
   * Column-level UNIQUE constraints of an earlier migration this one replaces with an index
   * of its own, dropped after it is built, where the dialect can drop them.
   */
  readonly dropColumnUniques?: readonly { readonly table: TableKey; readonly column: string }[];
  /** Heap fill factors, where the dialect has them: `percent` % of each new page filled. */
  readonly fillfactors?: readonly { readonly table: TableKey; readonly percent: number }[];
  /**
   * Column-level UNIQUE constraints an earlier migration dropped where it could, removed
   * here by rebuilding the table where only that removes them (`rebuildsToDropColumnUnique`,
   * SQLite); nothing on any other dialect. See {@link renderRebuild}.
   */
  readonly rebuildWithoutColumnUniques?: readonly {
    readonly table: TableKey;
    readonly column: string;
  }[];
  /**
   * Nullable columns added to a table of an earlier migration (`ALTER TABLE … ADD COLUMN`,
   * `IF NOT EXISTS` where the dialect has it): with no default, a change of the catalogue
   * only, on PostgreSQL and SQLite alike, whatever the table's size.
   */
  readonly addColumns?: readonly { readonly table: TableKey; readonly column: ColumnSpec }[];
}

/** What rendering needs of the dialect beyond its column types. */
export interface SchemaOptions {
  readonly ddl: DdlDialect;
  /** Whether the store keeps a single-writer lock table. */
  readonly singleWriterLock: boolean;
}

/** The table of applied migration versions, which the migrate loop creates first. */
export const MIGRATIONS_TABLE: TableSpec = {
  table: 'migrations',
  columns: [
    { name: 'version', type: 'integer', primaryKey: true },
    { name: 'applied_at', type: 'timestamp', notNull: true, default: 'now' },
  ],
};

/** The migrations, in order. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    tables: [
      {
        table: 'events',
        columns: [
          { name: 'id', type: 'sequence' },
          { name: 'uuid', type: 'uuid', notNull: true, unique: true },
          { name: 'name', type: 'name', notNull: true },
          { name: 'version', type: 'integer', notNull: true, default: { literal: 1 } },
          { name: 'payload', type: 'json', notNull: true },
          { name: 'headers', type: 'json', notNull: true, default: { json: '{}' } },
          { name: 'ordering_key', type: 'name' },
          { name: 'idempotency_key', type: 'name', unique: true },
          { name: 'occurred_at', type: 'timestamp', notNull: true },
          { name: 'recorded_at', type: 'timestamp', notNull: true, default: 'now' },
          { name: 'actor', type: 'text' },
          { name: 'correlation_id', type: 'name' },
          { name: 'caused_by', type: 'bigint' },
          { name: 'retention_seconds', type: 'integer' },
          { name: 'delete_when', type: 'status' },
          { name: 'suppressed_reason', type: 'text' },
        ],
      },
      {
        table: 'deliveries',
        columns: [
          { name: 'id', type: 'sequence' },
          { name: 'event_id', type: 'bigint', notNull: true },
          { name: 'receiver_key', type: 'name', notNull: true },
          { name: 'target', type: 'name', notNull: true, default: { literal: '' } },
          { name: 'status', type: 'status', notNull: true, default: { literal: 'pending' } },
          { name: 'attempts', type: 'integer', notNull: true, default: { literal: 0 } },
          { name: 'max_attempts', type: 'integer', notNull: true },
          { name: 'available_at', type: 'timestamp', notNull: true },
          { name: 'due_at', type: 'timestamp' },
          { name: 'claimed_by', type: 'name' },
          { name: 'claimed_at', type: 'timestamp' },
          { name: 'lease_until', type: 'timestamp' },
          { name: 'last_error', type: 'text' },
          { name: 'completed_at', type: 'timestamp' },
          { name: 'succeeded_at', type: 'timestamp' },
          { name: 'ordering_key', type: 'name' },
        ],
      },
      {
        table: 'lastSuccess',
        columns: [
          { name: 'receiver_key', type: 'name', primaryKey: true },
          { name: 'succeeded_at', type: 'timestamp', notNull: true },
        ],
      },
      {
        table: 'relayLock',
        onlyWithSingleWriterLock: true,
        columns: [
          { name: 'id', type: 'integer', primaryKey: true, check: 'id = 1' },
          { name: 'holder', type: 'text', notNull: true },
          { name: 'lease_until', type: 'timestamp', notNull: true },
        ],
      },
    ],
    indexes: [
      { name: 'events_name', table: 'events', columns: ['name', 'id'] },
      // The claim: owed rows by event sequence (replaced by migration 3's two).
      {
        name: 'deliveries_owed',
        table: 'deliveries',
        columns: ['event_id', 'id'],
        where: `status IN (${OWED})`,
      },
      // The ordering check: an earlier row of the same receiver, target and key.
      {
        name: 'deliveries_key',
        table: 'deliveries',
        columns: ['receiver_key', 'target', 'ordering_key', 'event_id'],
        where: `ordering_key IS NOT NULL AND status IN (${HOLDS_BACK})`,
      },
      { name: 'deliveries_event', table: 'deliveries', columns: ['event_id'] },
    ],
  },
  {
    // The prune's four queries, the dead-letter listing and health's reads, each over a
    // partial index holding only live rows, so none of them reads history: a prune with
    // nothing due costs the same at a thousand rows as at a million (docs/retention.md).
    version: 2,
    tables: [],
    indexes: [
      // The ordinary window: a range on recorded_at over the events with no window of
      // their own (a policy's event kept by a dead letter included).
      {
        name: 'events_recorded',
        table: 'events',
        columns: ['recorded_at', 'id'],
        where: 'retention_seconds IS NULL',
      },
      // The windows of their own: only the events declaring one.
      {
        name: 'events_own_window',
        table: 'events',
        columns: ['recorded_at', 'id'],
        where: 'retention_seconds IS NOT NULL',
      },
      // Each policy's live events (a consumed one is deleted at the next prune).
      {
        name: 'events_delete_succeeded',
        table: 'events',
        columns: ['id'],
        where: "delete_when = 'succeeded'",
      },
      {
        name: 'events_delete_settled',
        table: 'events',
        columns: ['id'],
        where: "delete_when = 'settled'",
      },
      // "Every delivery succeeded or was cancelled": no row owed (deliveries_owed of
      // migration 1) and none of these. Not a superset of the owed statuses, or the
      // claim's planner would prefer it to deliveries_owed and read dead letters.
      {
        name: 'deliveries_lost',
        table: 'deliveries',
        columns: ['event_id'],
        where: `status IN (${LOST})`,
      },
      // Dead letters newest first, and cleanupDeadLettered's range on completed_at.
      {
        name: 'deliveries_dead',
        table: 'deliveries',
        columns: ['completed_at', 'id'],
        where: "status = 'dead'",
      },
      // Health: the owed rows with a due time (scheduled ones, and owed ones aged from
      // it), a range on due_at; owed rows without one are deliveries_owed's, aged from
      // their event (the lowest event_id). Partial on due_at IS NOT NULL so the claim's
      // planner never takes it for deliveries_owed.
      {
        name: 'deliveries_scheduled',
        table: 'deliveries',
        columns: ['due_at', 'event_id'],
        where: `status IN (${OWED}) AND due_at IS NOT NULL`,
      },
      // quietReceivers(): each receiver's newest success, one probe per receiver, whatever
      // the history. Partial on succeeded_at IS NOT NULL, which no claim says.
      {
        name: 'deliveries_succeeded',
        table: 'deliveries',
        columns: ['receiver_key', 'succeeded_at'],
        where: 'succeeded_at IS NOT NULL',
      },
    ],
  },
  {
    // The claim reads the rows it can take, not the ones other batches hold (issue 7).
    // deliveries_owed held the claimed rows beside the pending and failed ones, so every
    // claim stepped over each row another batch had in hand (a heap visit apiece: with
    // four relays claiming ahead, thousands of rows per claim of 500, twice the buffers).
    // It is split in two: the rows ready to be claimed, by event sequence, and the
    // claimed ones by the end of their lease, which the claim reads only for leases
    // that lapsed (a range that is empty but after a crash). Each owed row is in exactly
    // one of them, so a status change costs the same index writes as before.
    version: 3,
    tables: [],
    indexes: [
      {
        name: 'deliveries_ready',
        table: 'deliveries',
        columns: ['event_id', 'id'],
        where: `status IN (${READY})`,
      },
      {
        name: 'deliveries_leased',
        table: 'deliveries',
        columns: ['lease_until', 'id'],
        where: "status = 'claimed'",
      },
    ],
    dropIndexes: ['deliveries_owed'],
  },
  {
    // A leaner schema (issue 28, docs/storage.md): every index measured, the WAL per event
    // of a fired, claimed and delivered event 2,214 B before.
    //
    // - The claim's indexes on the delivery row's phase, not its status (sql/phase.ts): a
    //   claim, a lease renewal and a hand-back change no indexed column, so PostgreSQL
    //   writes them as HOT updates, with no index entry (they rewrote pkey, event, key and
    //   leased: ~300 B per event). deliveries_ready and deliveries_leased become one index
    //   of the owed rows, claimed ones included (the claim steps over the rows other
    //   batches hold again, a heap visit each: issue 7 measured that in buffers, never in
    //   wall time); the ordering check's, the dead letters', the lost rows' and the
    //   scheduled rows' indexes the same predicates on the phase.
    // - The deliveries table's new pages filled to 40 % (PostgreSQL): the room a claim's
    //   HOT update needs on the row's own page, and a verdict's update too (it moved the
    //   row to another page, with a heap LOCK record for the old one, 2.7 per event).
    // - The idempotency key's uniqueness a partial index of the keyed events only: the
    //   column's UNIQUE held a NULL for every event without one (66 B), and fire's
    //   statement for keyless events needs no ON CONFLICT (its speculative insert wrote a
    //   48 B confirmation record). SQLite's column UNIQUE cannot be dropped without
    //   rebuilding the table; it stays beside the new index there.
    // - deliveries_event (every row by event, written at fire and again by each update)
    //   becomes deliveries_settled, the settled rows by event, written once, by the
    //   verdict: the owed rows of an event are deliveries_queue's already.
    // - events_name dropped: only readEvents({ name }) read it (assertFired, a test helper).
    version: 4,
    tables: [],
    phaseColumn: true,
    indexes: [
      {
        name: 'events_idempotency',
        table: 'events',
        columns: ['idempotency_key'],
        unique: true,
        where: 'idempotency_key IS NOT NULL',
      },
      // The claim: the owed rows by event sequence (pending and failed ones to take,
      // claimed ones whose lease lapsed), health's owed rows, the prune's "settled".
      {
        name: 'deliveries_queue',
        table: 'deliveries',
        columns: ['event_id', 'id'],
        where: (p) => p.owed(),
      },
      // The settled rows (history, dead letters) by event: the prune's rows of a due event,
      // replay's rows of an event beside deliveries_queue's owed ones.
      {
        name: 'deliveries_settled',
        table: 'deliveries',
        columns: ['event_id'],
        where: (p) => p.settled(),
      },
      // The ordering check: an earlier row of the same receiver, target and key, owed or dead.
      {
        name: 'deliveries_ordering',
        table: 'deliveries',
        columns: ['receiver_key', 'target', 'ordering_key', 'event_id'],
        where: (p) => `ordering_key IS NOT NULL AND ${p.holdsBack()}`,
      },
      // The prune's "every delivery succeeded or was cancelled" (deliveries_lost before).
      {
        name: 'deliveries_unconsumed',
        table: 'deliveries',
        columns: ['event_id'],
        where: (p) => p.lost(),
      },
      // Dead letters newest first, their cleanup, health's and requeue's dead rows.
      {
        name: 'deliveries_dead_letters',
        table: 'deliveries',
        columns: ['completed_at', 'id'],
        where: (p) => p.dead(),
      },
      // Health: the owed rows with a due time (deliveries_scheduled before).
      {
        name: 'deliveries_due',
        table: 'deliveries',
        columns: ['due_at', 'event_id'],
        where: (p) => `${p.owed()} AND due_at IS NOT NULL`,
      },
    ],
    dropIndexes: [
      'events_name',
      'deliveries_event',
      'deliveries_ready',
      'deliveries_leased',
      'deliveries_key',
      'deliveries_lost',
      'deliveries_dead',
      'deliveries_scheduled',
    ],
    dropColumnUniques: [{ table: 'events', column: 'idempotency_key' }],
    fillfactors: [{ table: 'deliveries', percent: 40 }],
  },
  {
    // SQLite only (issue 28): the events table rebuilt without the column UNIQUE on
    // idempotency_key that migration 4 could not drop there, so a keyless event stops
    // writing a NULL into sqlite_autoindex_…_2 beside events_idempotency's entries of the
    // keyed ones. Its rows, ids, AUTOINCREMENT counter and indexes are kept (renderRebuild).
    // Nothing on PostgreSQL, whose migration 4 dropped the constraint itself.
    version: 5,
    tables: [],
    indexes: [],
    rebuildWithoutColumnUniques: [{ table: 'events', column: 'idempotency_key' }],
  },
  {
    // Tenants (issue 31, docs/tenants.md): the event's tenant, NULL for every event of an
    // outbox without tenancy. No index and no delivery column: a tenant's idempotency and
    // ordering keys are stored prefixed with it (storage/tenant-keys.ts), so the unique
    // index and the ordering check of migration 4 keep them apart as they are, and a relay,
    // health or an operation narrowed by tenant reads it through the events' primary key,
    // as a topic is read. A NULL in a row that already has NULLs costs no byte (its null
    // bitmap grows within its alignment): the WAL per event is unchanged (docs/storage.md).
    version: 6,
    tables: [],
    indexes: [],
    addColumns: [{ table: 'events', column: { name: 'tenant', type: 'name' } }],
  },
];

/** The tables a migration creates on this dialect. */
export function tablesOf(m: Migration, o: SchemaOptions): TableSpec[] {
  return m.tables.filter((s) => o.singleWriterLock || !s.onlyWithSingleWriterLock);
}

/** `CREATE TABLE IF NOT EXISTS …` for one table. */
export function renderTable(spec: TableSpec, t: TableNames, ddl: DdlDialect): string {
  const columns = spec.columns.map((c) => {
    const def = c.default === undefined ? undefined : ddl.defaultValue(c.default);
    return [
      c.name,
      ddl.columnType(c.type),
      c.primaryKey && 'PRIMARY KEY',
      c.notNull && 'NOT NULL',
      c.unique && 'UNIQUE',
      def !== undefined && `DEFAULT ${def}`,
      c.check && `CHECK (${c.check})`,
    ]
      .filter(Boolean)
      .join(' ');
  });
  return `CREATE TABLE IF NOT EXISTS ${t[spec.table]} (\n  ${columns.join(',\n  ')}\n)`;
}

/** `CREATE [UNIQUE] INDEX IF NOT EXISTS …` for one index. */
export function renderIndex(spec: IndexSpec, t: TableNames, ddl: DdlDialect): string {
  const condition = typeof spec.where === 'function' ? spec.where(ddl.phase) : spec.where;
  const where = condition && ddl.partialIndexes ? ` WHERE ${condition}` : '';
  return `CREATE ${spec.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${quoteIdent(`${t.prefix}${spec.name}`)} ON ${t[spec.table]} (${spec.columns.join(', ')})${where}`;
}

/** `ALTER TABLE … ADD COLUMN [IF NOT EXISTS] …` for one added column. */
export function renderAddColumn(
  table: TableKey,
  c: ColumnSpec,
  t: TableNames,
  ddl: DdlDialect,
): string {
  const guard = ddl.addColumnIfNotExists ? 'IF NOT EXISTS ' : '';
  return `ALTER TABLE ${t[table]} ADD COLUMN ${guard}${c.name} ${ddl.columnType(c.type)}`;
}

/** `DROP INDEX IF EXISTS …` for one index (in the tables' schema, if any). */
export function renderDropIndex(name: string, t: TableNames): string {
  const index = quoteIdent(`${t.prefix}${name}`);
  return `DROP INDEX IF EXISTS ${t.schema ? `${quoteIdent(t.schema)}.${index}` : index}`;
}

/**
 * Every statement of one migration: tables, added columns, the phase column, indexes, then the indexes
 * and unique constraints it replaces, then the fill factors (which only shape pages
 * written from then on).
 */
export function renderMigration(m: Migration, t: TableNames, o: SchemaOptions): string[] {
  const defined = (s: string | undefined): s is string => s !== undefined;
  return [
    ...tablesOf(m, o).map((s) => renderTable(s, t, o.ddl)),
    ...(m.addColumns ?? []).map((a) => renderAddColumn(a.table, a.column, t, o.ddl)),
    ...(m.phaseColumn ? o.ddl.phaseColumn(t.deliveries) : []),
    ...m.indexes.map((s) => renderIndex(s, t, o.ddl)),
    ...(m.dropIndexes ?? []).map((name) => renderDropIndex(name, t)),
    ...(m.dropColumnUniques ?? []).map((u) => o.ddl.dropColumnUnique(t[u.table], u.column)),
    ...(m.fillfactors ?? []).map((f) => o.ddl.fillfactor(t[f.table], f.percent)),
    ...(o.ddl.rebuildsToDropColumnUnique
      ? (m.rebuildWithoutColumnUniques ?? []).flatMap((u) => renderRebuild(u, m.version, t, o))
      : []),
  ].filter(defined);
}

/** The unescaped name of each table, after the prefix. */
const TABLE_NAMES: Record<TableKey, string> = {
  events: 'events',
  deliveries: 'deliveries',
  lastSuccess: 'receiver_last_success',
  migrations: 'migrations',
  relayLock: 'relay_lock',
};

/**
 * SQLite's way to drop a column's UNIQUE (its `ALTER TABLE` has no such form): create the
 * table again without it under a name of its own, copy every row with its id, carry the
 * AUTOINCREMENT counter over (so an id a pruned event had is never given again), drop the
 * old table, rename the new one into its place, and build again the indexes the earlier
 * migrations left on it (dropping the table dropped them). All in the migration's one
 * transaction: a failure leaves the old table as it was. No other table references the
 * events by a foreign key. Run again (a printed script applied twice), it rebuilds the
 * table again, to the same rows.
 */
function renderRebuild(
  u: { readonly table: TableKey; readonly column: string },
  version: number,
  t: TableNames,
  o: SchemaOptions,
): string[] {
  const created = MIGRATIONS.flatMap((m) => m.tables).find((s) => s.table === u.table);
  if (!created) throw new Error(`migration ${version}: no migration creates ${u.table}`);
  // Its columns as of this migration: migration 1's, and those a migration before this one
  // added (a later migration's column is added after the rebuild, by that migration).
  const added = MIGRATIONS.filter((m) => m.version < version).flatMap((m) =>
    (m.addColumns ?? []).filter((a) => a.table === u.table).map((a) => a.column),
  );
  const spec: TableSpec = {
    ...created,
    columns: [...created.columns, ...added].map((c) =>
      c.name === u.column ? { ...c, unique: undefined } : c,
    ),
  };
  const name = `${t.prefix}${TABLE_NAMES[u.table]}`;
  const rebuilt = `${name}_rebuild`;
  const qualify = (n: string) =>
    t.schema ? `${quoteIdent(t.schema)}.${quoteIdent(n)}` : quoteIdent(n);
  const columns = spec.columns.map((c) => c.name).join(', ');
  const seq = (n: string) => `'${n.replace(/'/g, "''")}'`;
  return [
    `DROP TABLE IF EXISTS ${qualify(rebuilt)}`,
    renderTable(spec, { ...t, [u.table]: qualify(rebuilt) }, o.ddl),
    `INSERT INTO ${qualify(rebuilt)} (${columns}) SELECT ${columns} FROM ${t[u.table]} ORDER BY id`,
    `DELETE FROM sqlite_sequence WHERE name = ${seq(rebuilt)}`,
    `INSERT INTO sqlite_sequence (name, seq) SELECT ${seq(rebuilt)}, seq FROM sqlite_sequence WHERE name = ${seq(name)}`,
    `DROP TABLE ${t[u.table]}`,
    `ALTER TABLE ${qualify(rebuilt)} RENAME TO ${quoteIdent(name)}`,
    ...liveIndexes(u.table, version).map((spec) => renderIndex(spec, t, o.ddl)),
  ];
}

/** The indexes on `table` that the migrations before `version` built and did not drop. */
function liveIndexes(table: TableKey, version: number): IndexSpec[] {
  const live = new Map<string, IndexSpec>();
  for (const m of MIGRATIONS) {
    if (m.version >= version) break;
    for (const spec of m.indexes) if (spec.table === table) live.set(spec.name, spec);
    for (const name of m.dropIndexes ?? []) live.delete(name);
  }
  return [...live.values()];
}
