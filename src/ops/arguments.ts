/**
 * The arguments the operations share, checked once and before any statement, so a wrong
 * id raises a {@link ValidationError} naming it rather than a database error that would
 * abort the caller's PostgreSQL transaction (an invalid uuid cast, a non-numeric id).
 */
import type { Transaction } from 'sequelize';
import type { OutboxConfig } from '../declare/define-outbox.js';
import type { ResolvedEventColumn } from '../declare/event-columns.js';
import { ValidationError } from '../errors/outbox-error.js';
import { checkColumns, readValue } from '../event-columns/values.js';
import type { Runtime } from '../runtime.js';
import { tenantProblem } from '../scope/tenant.js';

/**
 * An event, as an operation takes it: its id (`OutboxEvent.id`, the UUIDv7 receivers
 * dedupe on and logs, headers and the dead-letter list show), or the event object itself —
 * what `fire()` returned, or what a receiver was handed. Not the `sequence`: that is the
 * delivery order, an internal number nobody outside the database holds.
 */
export type EventIdentity = string | { readonly id: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The uuids of `events` (an array of {@link EventIdentity}), lower-cased, each once, in the
 * order given.
 * @throws {ValidationError} for something that is not an array, or an entry that is no
 * event id, naming the call and the entry.
 */
export function eventUuids(events: unknown, where: string): string[] {
  if (typeof events === 'string' || !Array.isArray(events)) {
    throw new ValidationError(
      `${where} takes an array of events (their ids, or the events fire() returned); got ${describe(events)}${typeof events === 'string' ? ` — wrap it: [${JSON.stringify(events)}]` : ''}`,
      { path: 'eventIds' },
    );
  }
  const seen = new Set<string>();
  events.forEach((entry: unknown, i) => {
    const id =
      typeof entry === 'object' && entry !== null && 'id' in entry
        ? (entry as { id: unknown }).id
        : entry;
    if (typeof id !== 'string' || !UUID.test(id)) {
      const unrecorded = id === '' && typeof entry === 'object';
      throw new ValidationError(
        unrecorded
          ? `${where}: eventIds[${i}] was never recorded (suppressed with record: false), so it has no deliveries`
          : `${where}: eventIds[${i}] must be an event's id (its UUID, OutboxEvent.id) or the event itself; got ${describe(entry)}`,
        { path: `eventIds[${i}]` },
      );
    }
    seen.add(id.toLowerCase());
  });
  return [...seen];
}

/**
 * Delivery ids (the rows' primary keys, as the dead-letter list and `deliverOne` show
 * them): decimal strings or safe integers, returned as strings.
 * @throws {ValidationError} naming the entry at fault.
 */
export function deliveryIdList(ids: unknown, where: string, path = 'deliveryIds'): string[] {
  if (!Array.isArray(ids)) {
    throw new ValidationError(
      `${where}: ${path} must be an array of delivery ids; got ${describe(ids)}`,
      {
        path,
      },
    );
  }
  return [
    ...new Set(
      ids.map((id: unknown, i) => {
        if (typeof id === 'number' && Number.isSafeInteger(id) && id > 0) return String(id);
        if (typeof id === 'string' && /^[1-9][0-9]{0,18}$/.test(id)) return id;
        throw new ValidationError(
          `${where}: ${path}[${i}] must be a delivery id (a positive integer, or its digits as a string); got ${describe(id)}`,
          { path: `${path}[${i}]` },
        );
      }),
    ),
  ];
}

/**
 * A receiver key option: undefined, or a non-empty string.
 * @throws {ValidationError} for anything else.
 */
export function receiverKeyOption(key: unknown, where: string, path = 'receiverKey') {
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || key === '') {
    throw new ValidationError(
      `${where}: ${path} must be a receiver key (a non-empty string); got ${describe(key)}`,
      {
        path,
      },
    );
  }
  return key;
}

/**
 * A `limit` option: undefined, or an integer ≥ 1.
 * @throws {ValidationError} for anything else.
 */
export function limitOption(limit: unknown, where: string): number | undefined {
  if (limit === undefined) return undefined;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
    throw new ValidationError(`${where}: limit must be an integer ≥ 1; got ${describe(limit)}`, {
      path: 'limit',
    });
  }
  return limit;
}

export function describe(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}

/** The uuids asked for that no locked event answers, in the order asked. */
export function missingOf(
  uuids: readonly string[],
  found: readonly { readonly uuid: string }[],
): string[] {
  const present = new Set(found.map((e) => e.uuid.toLowerCase()));
  return uuids.filter((u) => !present.has(u));
}

/**
 * An operation's `tenant` (`settings.tenancy: 'column'`): undefined (every tenant's rows),
 * or a tenant name, which narrows the operation to that tenant's events.
 * @throws {ValidationError} on an outbox without tenancy, or for no tenant name.
 */
export function tenantOption(
  config: OutboxConfig,
  tenant: unknown,
  where: string,
): string | undefined {
  if (tenant === undefined) return undefined;
  if (config.settings.tenancy === 'none') {
    throw new ValidationError(
      `${where}: tenant narrows by tenant, but this outbox keeps no tenants; declare defineOutbox({ settings: { tenancy: 'column' } }) or drop the tenant`,
      { path: 'tenant' },
    );
  }
  const problem = tenantProblem(tenant);
  if (problem) throw new ValidationError(`${where}: tenant ${problem}`, { path: 'tenant' });
  return tenant as string;
}

/** The events an operation narrowed to `tenant` may touch: those of that tenant. */
export function ofTenant<E extends { readonly tenant?: string | null }>(
  events: readonly E[],
  tenant: string | undefined,
): readonly E[] {
  return tenant === undefined ? events : events.filter((e) => e.tenant === tenant);
}

/**
 * An operation's `columns` (`defineOutbox({ eventColumns })`): undefined (every event's
 * rows), or an object of declared columns and the values their events hold (`null`: none),
 * all of which must match. Checked as `fire(…, { columns })` checks them.
 * @throws {ValidationError} for an undeclared column, a value of the wrong type, or `{}`.
 */
export function columnsOption(
  config: OutboxConfig,
  columns: unknown,
  where: string,
): readonly { readonly column: ResolvedEventColumn; readonly value: unknown }[] | undefined {
  if (columns === undefined) return undefined;
  const checked = checkColumns(config.eventColumns, columns, where);
  const equal = (checked?.columns ?? []).map((column, i) => ({
    column,
    value: checked?.values[i] as unknown,
  }));
  if (equal.length === 0) {
    throw new ValidationError(
      `${where}: columns must name at least one event column (got {}); leave it out to reach every event`,
      { path: 'columns' },
    );
  }
  return equal;
}

/**
 * The events an operation narrowed by `columns` may touch, as sequences: one SELECT over the
 * events table (a declared column's own index where `index: true`). Undefined: no filter.
 */
export async function eventsOfColumns(
  rt: Runtime,
  equal: readonly { readonly column: ResolvedEventColumn; readonly value: unknown }[] | undefined,
): Promise<string[] | undefined> {
  return equal === undefined ? undefined : rt.store.eventsWithColumns(equal);
}

/**
 * The events an operation narrowed by `columns` may touch, among `events` (those it
 * locked): the ones whose columns hold every value, read in one SELECT by primary key. The
 * rest are left alone and reported `missing`, as an event of another tenant is.
 */
export async function ofColumns<E extends { readonly sequence: string }>(
  rt: Runtime,
  events: readonly E[],
  equal: readonly { readonly column: ResolvedEventColumn; readonly value: unknown }[] | undefined,
  transaction?: Transaction,
): Promise<readonly E[]> {
  if (equal === undefined || events.length === 0) return events;
  const rows = await rt.store.readEventColumns(
    events.map((e) => e.sequence),
    equal.map((e) => e.column),
    transaction,
  );
  const same = (type: ResolvedEventColumn['type'], stored: unknown, wanted: unknown) => {
    const a = readValue(type, stored);
    const b = readValue(type, wanted);
    return a instanceof Date && b instanceof Date ? a.getTime() === b.getTime() : a === b;
  };
  return events.filter((e) => {
    const row = rows.get(e.sequence);
    return equal.every(({ column, value }) => same(column.type, row?.[column.name], value));
  });
}
