import type {
  Catalogue,
  CatalogueEvent,
  CatalogueField,
  CatalogueReceiver,
} from '../src/introspect/index.js';
import { formatDuration } from './format-duration.js';

/** What kind of change one {@link CatalogueChange} is; stable, for pipelines to match on. */
export type CatalogueChangeKind =
  | 'event-removed'
  | 'event-added'
  | 'event-version-changed'
  | 'event-changed'
  | 'event-codec-changed'
  | 'field-removed'
  | 'field-added'
  | 'field-type-changed'
  | 'field-now-required'
  | 'field-now-optional'
  | 'receiver-removed'
  | 'receiver-added'
  | 'receiver-moved'
  | 'receiver-mode-changed'
  | 'receiver-lane-changed'
  | 'receiver-targets-changed'
  | 'receiver-due-changed'
  | 'receiver-eager-changed'
  | 'receiver-changed'
  | 'column-added'
  | 'column-removed'
  | 'column-type-changed'
  | 'column-index-changed';

/** One difference between two catalogues, classified. */
export interface CatalogueChange {
  readonly kind: CatalogueChangeKind;
  /** Whether a consumer of the old catalogue can break: see {@link diffCatalogues}. */
  readonly breaking: boolean;
  /** The event the change is about (for a wildcard receiver, `*`). */
  readonly event: string;
  /** The field or receiver key the change is about, if any. */
  readonly subject: string | null;
  /** One line a person reads in a pull request. */
  readonly message: string;
}

/** Every difference between two catalogues, split the way CI acts on them. */
export interface CatalogueDiff {
  /** Changes that can break a consumer or strand rows; CI fails on any of these. */
  readonly breaking: readonly CatalogueChange[];
  /** Changes no consumer of the old catalogue can notice as a break. */
  readonly compatible: readonly CatalogueChange[];
}

/**
 * Compare two catalogues and classify every change.
 *
 * "Breaking" means a consumer of the old catalogue can break, or rows already written no
 * longer fit the declaration they will be delivered under; CI fails on it unless the
 * break is announced (`--allow-breaking`). Everything else is reported as compatible.
 *
 * Breaking:
 * - an event removed (a rename is a removal: rows are stored under the old name);
 * - a field removed, a field's type changed, a field that was optional now required, a
 *   required field added without a version bump (rows already in the log lack it);
 * - a receiver removed (its owed rows are orphaned);
 * - a receiver moved to another event, or to another topic pattern, or between one event,
 *   a pattern and `AnyEvent` (it is owed different events);
 * - a receiver's mode changed (a different guarantee to the firing transaction);
 * - a receiver gaining or losing `targets` (`receiver-targets-changed`): it changes what a
 *   delivery is. Gaining it, the rows already owed are one per event with no target, and
 *   the fan-out receiver is handed them with `context.target` undefined; losing it, the
 *   rows already written one per target are each still delivered, to a receiver that now
 *   expects one per event. The targets function moving to another line is no change.
 *
 * Compatible (reported, never failing CI):
 * - an event, an optional field or a receiver added; a required field added with a
 *   version bump; a field made optional; a version bump; a description, retention or
 *   upgrade changed;
 * - a receiver's lane changed (`receiver-lane-changed`): operational, not breaking. Its
 *   owed rows move with it, since the lane is read at claim time; what it needs is a relay
 *   serving the new lane, which the message says;
 * - a receiver's `due` changed (`receiver-due-changed`): a delay's seconds, a due function
 *   gained or lost, a delay traded for a function. It changes when the work happens, for
 *   rows written from now on; rows already written keep the due time they were given;
 * - `eager` switched (`receiver-eager-changed`): the relay stays the fallback either way;
 *   an eager attempt adds only the duplicate at-least-once already asks receivers to bear;
 * - tuning (`receiver-changed`): max attempts (copied onto rows at fire time, so rows in
 *   flight keep theirs), lease, timeout, backoff, give-up-after, kind, transport, site.
 *
 * A handler, targets or due function moving to another line is not a change at all. A
 * field an older catalogue does not have yet (`eager`, `pattern`) is read as its default,
 * so regenerating with a newer outboxkit reports nothing.
 *
 * Both lists are in a stable order: by event, then by subject.
 */
export function diffCatalogues(old: Catalogue, next: Catalogue): CatalogueDiff {
  const changes: CatalogueChange[] = [];
  const oldEvents = byKey(old.events, (e) => e.name);
  const newEvents = byKey(next.events, (e) => e.name);
  const added = next.events.filter((e) => !oldEvents.has(e.name));

  for (const before of old.events) {
    const after = newEvents.get(before.name);
    if (!after) {
      const twin = added.find((e) => sameShape(e, before));
      changes.push({
        kind: 'event-removed',
        breaking: true,
        event: before.name,
        subject: null,
        message: twin
          ? `event ${before.name} removed — renamed to ${twin.name}? Rows and consumers still use the old name`
          : `event ${before.name} removed`,
      });
      continue;
    }
    diffEvent(before, after, changes);
  }
  for (const e of added) {
    changes.push({
      kind: 'event-added',
      breaking: false,
      event: e.name,
      subject: null,
      message: `event ${e.name} added (v${e.version})`,
    });
  }

  diffColumns(old, next, changes);

  const oldReceivers = allReceivers(old);
  const newReceivers = allReceivers(next);
  for (const [key, before] of oldReceivers) {
    const after = newReceivers.get(key);
    if (!after) {
      changes.push(receiverChange('receiver-removed', true, before, `receiver ${key} removed`));
    } else {
      diffReceiver(before, after, changes);
    }
  }
  for (const [key, after] of newReceivers) {
    if (!oldReceivers.has(key)) {
      changes.push(
        receiverChange('receiver-added', false, after, `receiver ${key} added (${after.mode})`),
      );
    }
  }

  changes.sort(
    (a, b) =>
      compare(a.event, b.event) ||
      compare(a.subject ?? '', b.subject ?? '') ||
      compare(a.kind, b.kind),
  );
  return {
    breaking: changes.filter((c) => c.breaking),
    compatible: changes.filter((c) => !c.breaking),
  };
}

function diffEvent(before: CatalogueEvent, after: CatalogueEvent, out: CatalogueChange[]) {
  const name = after.name;
  const bumped = after.version > before.version;
  if (after.version !== before.version) {
    out.push({
      kind: 'event-version-changed',
      breaking: false,
      event: name,
      subject: null,
      message: `event ${name} version ${before.version} → ${after.version}`,
    });
  }
  // A catalogue written before codecs existed has none: its events were json.
  const codecBefore = before.codec ?? 'json';
  const codecAfter = after.codec ?? 'json';
  if (codecBefore !== codecAfter) {
    out.push({
      kind: 'event-codec-changed',
      breaking: true,
      event: name,
      subject: null,
      message: `event ${name} codec ${codecBefore} → ${codecAfter}: its message bodies change shape for every consumer (old rows still decode with their own)`,
    });
  }
  const what: string[] = [];
  if (before.description !== after.description) what.push('description');
  if (before.retentionSeconds !== after.retentionSeconds || before.deleteWhen !== after.deleteWhen)
    what.push('retention');
  if (before.migratesOlderRows !== after.migratesOlderRows) what.push('upgrade');
  if (what.length) {
    out.push({
      kind: 'event-changed',
      breaking: false,
      event: name,
      subject: null,
      message: `event ${name}: ${what.join(', ')} changed`,
    });
  }

  const oldFields = byKey(before.fields, (f) => f.name);
  const newFields = byKey(after.fields, (f) => f.name);
  for (const f of before.fields) {
    const g = newFields.get(f.name);
    if (!g) {
      // A removed parent already says it: its fields went with it.
      if (!oldFields.has(parentOf(f.name) ?? '') || newFields.has(parentOf(f.name) ?? '')) {
        out.push(field('field-removed', true, name, f, `${name}: field ${f.name} removed`));
      }
      continue;
    }
    if (f.type !== g.type) {
      out.push(
        field(
          'field-type-changed',
          true,
          name,
          g,
          `${name}: field ${f.name} type changed from ${f.type} to ${g.type}`,
        ),
      );
    }
    if (!f.required && g.required) {
      out.push(
        field('field-now-required', true, name, g, `${name}: field ${f.name} is now required`),
      );
    }
    if (f.required && !g.required) {
      out.push(
        field('field-now-optional', false, name, g, `${name}: field ${f.name} is now optional`),
      );
    }
  }
  for (const g of after.fields) {
    if (oldFields.has(g.name)) continue;
    const parent = parentOf(g.name);
    if (parent !== undefined && !oldFields.has(parent)) continue; // covered by its parent
    const breaking = g.required && !bumped;
    out.push(
      field(
        'field-added',
        breaking,
        name,
        g,
        g.required
          ? breaking
            ? `${name}: required field ${g.name} added without a version bump (rows already recorded lack it)`
            : `${name}: required field ${g.name} added with version ${after.version}`
          : `${name}: optional field ${g.name} added`,
      ),
    );
  }
}

function diffReceiver(
  oldReceiver: CatalogueReceiver,
  newReceiver: CatalogueReceiver,
  out: CatalogueChange[],
) {
  const before = withDefaults(oldReceiver);
  const after = withDefaults(newReceiver);
  const key = after.key;
  if (before.event !== after.event || before.pattern !== after.pattern) {
    out.push(
      receiverChange(
        'receiver-moved',
        true,
        after,
        `receiver ${key} now listens to ${listensTo(after)} instead of ${listensTo(before)}`,
      ),
    );
  }
  if (before.mode !== after.mode) {
    out.push(
      receiverChange(
        'receiver-mode-changed',
        true,
        after,
        `receiver ${key} mode changed from ${before.mode} to ${after.mode}`,
      ),
    );
  }
  if (before.lane !== after.lane) {
    const served =
      after.lane === 'default'
        ? 'the relays started without --lane claim its rows now'
        : `its owed rows move with it: run a relay with --lane ${after.lane}, or they wait`;
    out.push(
      receiverChange(
        'receiver-lane-changed',
        false,
        after,
        `receiver ${key} lane changed from ${before.lane} to ${after.lane} (${served})`,
      ),
    );
  }
  if ((before.targets === null) !== (after.targets === null)) {
    out.push(
      receiverChange(
        'receiver-targets-changed',
        true,
        after,
        after.targets !== null
          ? `receiver ${key} is now a fan-out (targets ${after.targets}): one delivery per target instead of one per event; rows already owed have no target`
          : `receiver ${key} is no longer a fan-out (targets removed): one delivery per event instead of one per target; rows already written per target are each still delivered`,
      ),
    );
  }
  const due = dueChange(before, after);
  if (due) {
    out.push(receiverChange('receiver-due-changed', false, after, `receiver ${key} ${due}`));
  }
  if (before.eager !== after.eager) {
    out.push(
      receiverChange(
        'receiver-eager-changed',
        false,
        after,
        after.eager
          ? `receiver ${key} is now eager: also attempted right after commit in the firing process, the relay the fallback`
          : `receiver ${key} is no longer eager: only the relay attempts it`,
      ),
    );
  }
  const props = [
    'kind',
    'transport',
    'site',
    'maxAttempts',
    'leaseSeconds',
    'timeoutSeconds',
    'giveUpAfterSeconds',
  ] as const;
  const tuned = props
    .filter((p) => before[p] !== after[p])
    .map((p) => `${p} ${show(before[p])} → ${show(after[p])}`);
  const b = before.backoff;
  const a = after.backoff;
  if (b.baseSeconds !== a.baseSeconds || b.capSeconds !== a.capSeconds) {
    tuned.push(
      `backoff ${show(b.baseSeconds)}..${show(b.capSeconds)} → ${show(a.baseSeconds)}..${show(a.capSeconds)}`,
    );
  }
  if (tuned.length) {
    out.push(
      receiverChange('receiver-changed', false, after, `receiver ${key}: ${tuned.join(', ')}`),
    );
  }
}

/**
 * A receiver as an older catalogue may spell it: the fields added since (without a format
 * bump) read as their defaults, so upgrading outboxkit is not a change to the catalogue.
 */
function withDefaults(r: CatalogueReceiver): CatalogueReceiver {
  const partial = r as Partial<CatalogueReceiver> & CatalogueReceiver;
  return {
    ...r,
    pattern: partial.pattern ?? null,
    lane: partial.lane ?? 'default',
    eager: partial.eager ?? false,
    targets: partial.targets ?? null,
    dueSeconds: partial.dueSeconds ?? null,
    dueCallable: partial.dueCallable ?? null,
    giveUpAfterSeconds: partial.giveUpAfterSeconds ?? null,
  };
}

/** What a receiver listens to, as a message says it. */
function listensTo(r: CatalogueReceiver): string {
  if (r.event !== null) return r.event;
  return r.pattern !== null ? `the topic pattern ${r.pattern}` : 'every event (AnyEvent)';
}

/** How a receiver's due time changed, as a message says it; undefined for no change. */
function dueChange(before: CatalogueReceiver, after: CatalogueReceiver): string | undefined {
  const was = dueText(before);
  const now = dueText(after);
  // A due function moving to another line is no change, as a handler's is not.
  const same =
    before.dueSeconds === after.dueSeconds &&
    (before.dueCallable === null) === (after.dueCallable === null);
  if (same) return undefined;
  if (was === undefined) return `is now scheduled: due ${now} (it ran on record)`;
  if (now === undefined) return `is no longer scheduled (was due ${was}): it runs on record`;
  return `due changed from ${was} to ${now} (rows already written keep their due time)`;
}

function dueText(r: CatalogueReceiver): string | undefined {
  if (r.dueSeconds !== null) return `${formatDuration(r.dueSeconds)} after the event occurred`;
  if (r.dueCallable !== null) return `when its due function says (${r.dueCallable})`;
  return undefined;
}

/**
 * The event columns (`eventColumns`): one added is compatible (migrate adds it, NULL for the
 * events already there); one removed or retyped is breaking (a receiver reading
 * `event.columns` loses it, and migrate never drops nor alters a column: the table keeps
 * it); an index gained or lost is compatible. Their event is `*`: every event has them.
 */
function diffColumns(old: Catalogue, next: Catalogue, changes: CatalogueChange[]): void {
  const before = new Map((old.eventColumns ?? []).map((c) => [c.name, c]));
  const after = new Map((next.eventColumns ?? []).map((c) => [c.name, c]));
  const column = (kind: CatalogueChangeKind, breaking: boolean, name: string, message: string) =>
    changes.push({ kind, breaking, event: '*', subject: name, message });
  for (const [name, b] of before) {
    const a = after.get(name);
    if (!a) {
      column(
        'column-removed',
        true,
        name,
        `event column ${name} removed — receivers reading event.columns.${name} lose it; the table keeps the column (migrate never drops one)`,
      );
      continue;
    }
    if (a.type !== b.type)
      column(
        'column-type-changed',
        true,
        name,
        `event column ${name} changed type ${b.type} → ${a.type}: migrate refuses it until the column is changed by a migration of your own`,
      );
    if (a.index !== b.index)
      column(
        'column-index-changed',
        false,
        name,
        `event column ${name} ${a.index ? 'gains an index (migrate builds it)' : 'no longer declares its index (migrate leaves it)'}`,
      );
  }
  for (const [name, a] of after) {
    if (!before.has(name))
      column(
        'column-added',
        false,
        name,
        `event column ${name} (${a.type}) added: run npx outbox migrate; NULL for the events already there`,
      );
  }
}

function receiverChange(
  kind: CatalogueChangeKind,
  breaking: boolean,
  r: CatalogueReceiver,
  message: string,
): CatalogueChange {
  return { kind, breaking, event: r.event ?? '*', subject: r.key, message };
}

function field(
  kind: CatalogueChangeKind,
  breaking: boolean,
  event: string,
  f: CatalogueField,
  message: string,
): CatalogueChange {
  return { kind, breaking, event, subject: f.name, message };
}

/** `items[].sku` → `items`, `address.city` → `address`, `orderId` → undefined. */
export function parentOf(path: string): string | undefined {
  const dot = path.lastIndexOf('.');
  if (dot < 0) return undefined;
  return path.slice(0, dot).replace(/(\[\]|\{\})+$/, '');
}

function sameShape(a: CatalogueEvent, b: CatalogueEvent): boolean {
  return JSON.stringify(a.schema) === JSON.stringify(b.schema);
}

function allReceivers(c: Catalogue): Map<string, CatalogueReceiver> {
  const out = new Map<string, CatalogueReceiver>();
  for (const e of c.events) for (const r of e.receivers) out.set(r.key, r);
  for (const r of c.wildcardReceivers) out.set(r.key, r);
  return out;
}

function byKey<T>(items: readonly T[], key: (item: T) => string): Map<string, T> {
  return new Map(items.map((item) => [key(item), item]));
}

function show(value: unknown): string {
  return value === null ? 'default' : String(value);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
