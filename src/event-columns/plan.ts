/**
 * What `migrate` does for the declared event columns (`defineOutbox({ eventColumns })`): the
 * library's versioned migrations are fixed, so the application's columns are reconciled
 * after them, against what the events table has: each declared column that is missing is
 * added (nullable, no default: a catalogue change only, whatever the table's size), each
 * `index: true` whose index is missing is built. Nothing is ever dropped: a column the config
 * no longer declares stays (with its values) and is reported. A column whose type differs
 * from its declaration is refused, before anything is changed.
 */
import type { ResolvedEventColumn } from '../declare/event-columns.js';
import { RESERVED_EVENT_COLUMNS } from '../declare/event-columns.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import type { EventColumnSpelling } from '../storage/sql/dialect.js';
import { eventColumnIndexName } from '../storage/sql/event-columns.js';
import type { TableColumn } from '../storage/store.js';
import type { TableNames } from '../storage/tables.js';

/** The difference between the declared columns and the events table. */
export interface EventColumnPlan {
  /** Declared columns the table lacks: `migrate` adds them. */
  readonly add: readonly ResolvedEventColumn[];
  /** Declared `index: true` columns without their index: `migrate` builds it. */
  readonly index: readonly ResolvedEventColumn[];
  /** Columns of the table that are neither the outbox's own nor declared: kept, reported. */
  readonly undeclared: readonly string[];
  /** Declared columns the table holds with another type: `migrate` refuses. */
  readonly mismatched: readonly { readonly column: ResolvedEventColumn; readonly found: string }[];
}

/** Compare the declaration with the table as the database describes it. */
export function planEventColumns(
  declared: readonly ResolvedEventColumn[],
  table: { readonly columns: readonly TableColumn[]; readonly indexes: readonly string[] },
  spelling: EventColumnSpelling,
  t: TableNames,
): EventColumnPlan {
  const found = new Map(table.columns.map((c) => [c.name.toLowerCase(), c.type]));
  const indexes = new Set(table.indexes.map((n) => n.toLowerCase()));
  const names = new Set(declared.map((c) => c.name));
  const add: ResolvedEventColumn[] = [];
  const mismatched: { column: ResolvedEventColumn; found: string }[] = [];
  for (const c of declared) {
    const type = found.get(c.name);
    if (type === undefined) add.push(c);
    else if (!spelling.holds(c.type, type)) mismatched.push({ column: c, found: type });
  }
  const index = declared.filter(
    (c) => c.index && !indexes.has(eventColumnIndexName(t, c.name).toLowerCase()),
  );
  const undeclared = [...found.keys()].filter(
    (n) => !names.has(n) && !RESERVED_EVENT_COLUMNS.includes(n),
  );
  return { add, index, undeclared, mismatched };
}

/** Whether the plan changes anything. */
export const isPending = (p: EventColumnPlan): boolean => p.add.length > 0 || p.index.length > 0;

/** One line for the plan's pending changes (`outbox migrate --check`, the logs). */
export function describePending(p: EventColumnPlan): string {
  const parts = [
    ...p.add.map((c) => `add column ${c.name} (${c.type})`),
    ...p.index.map((c) => `index column ${c.name}`),
  ];
  return parts.join(', ');
}

/**
 * Refuse a column whose type differs from its declaration: neither migrate nor fire can
 * write it as declared, and changing a column's type is the application's migration to make.
 * @throws {ConfigurationError} naming each column, its declared type and the one found.
 */
export function refuseMismatched(p: EventColumnPlan, where: string, table: string): void {
  if (p.mismatched.length === 0) return;
  const list = p.mismatched
    .map((m) => `${m.column.name} is declared ${m.column.type} but the column is ${m.found}`)
    .join('; ');
  throw new ConfigurationError(
    `${where}: eventColumns disagree with ${table}: ${list}. Change the declaration, or change the column's type with a migration of your own; outboxkit never alters or drops an existing column`,
    { path: `eventColumns.${p.mismatched[0].column.name}` },
  );
}
