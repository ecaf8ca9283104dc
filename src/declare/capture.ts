/**
 * `capture(Model, options)`: declare that every ORM write of a Sequelize model writes an
 * event per changed row, in the write's own transaction (the hooks live in `src/capture/`).
 *
 * Why a declaration in the config rather than hooks the app adds by hand: the captured
 * topics are declared events like any other — receivers subscribe to them, the catalogue
 * lists them with a payload schema derived from the model's attributes — so they must be
 * known where the events are. Everything that can be checked is checked here, when the
 * config is declared, naming the model and the option: a field the model does not have,
 * `fields` with `exclude`, `extend` with `extendMany`, a template naming something else.
 */

import type { Attributes, Model, Sequelize, Transaction } from 'sequelize';
import { z } from 'zod';
import { ConfigurationError } from '../errors/outbox-error.js';
import type { ResolvedEvent } from './event.js';
import type { EventColumnValue } from './event-columns.js';

const CAPTURE = Symbol.for('outboxkit.capture');

/** The row operations a capture writes events for, as they appear in topics. */
export type CaptureOperation = 'inserted' | 'updated' | 'deleted';

/** Every operation, in the order of a row's life. */
export const CAPTURE_OPERATIONS: readonly CaptureOperation[] = ['inserted', 'updated', 'deleted'];

/**
 * What an event holds of its row: `keys` the key only (the cheapest: at most a read of the
 * keys), `after` the row as the write left it (for a delete, `before`: the row as it was),
 * `beforeAndAfter` both (`before` null for an insert, `after` null for a delete), the rows
 * read first — locked with `SELECT … FOR UPDATE` on PostgreSQL — where the ORM has no
 * snapshot of them.
 */
export type CapturePayload = 'keys' | 'after' | 'beforeAndAfter';

/**
 * The shape of a Sequelize model class as capture reads it: the static side of a model
 * built with `sequelize.define` or `Model.init` (structural, so any Sequelize 6 model fits).
 */
export interface CapturableModel {
  readonly name: string;
  /** The model's attributes by name (Sequelize's `Model.getAttributes()`): their column (`field`) and which form the primary key. */
  getAttributes?(): Record<string, { type?: unknown; field?: string; primaryKey?: boolean }>;
  readonly primaryKeyAttributes?: readonly string[];
  /** The model's table, and its schema when it has one (Sequelize's `Model.getTableName()`). */
  getTableName?(): string | { tableName: string; schema?: string };
}

/**
 * One change as capture saw it: what `extend` is handed, and what the envelope is made of.
 */
export interface CapturedChange {
  /** The model's label, `{app}.{ModelName}` (`shop.Order`). */
  readonly model: string;
  /** What the write did: `inserted`, `updated` or `deleted`. */
  readonly operation: CaptureOperation;
  /** The key: its value, or an object of its fields for a composite key. */
  readonly pk: unknown;
  /** The fields the caller set, without the ORM's timestamps; null when not known and for inserts and deletes. */
  readonly changed: readonly string[] | null;
  /** The row before the write, in its JSON form; null for an insert. */
  readonly before: Record<string, unknown> | null;
  /** The row after the write, in its JSON form; null for a delete. */
  readonly after: Record<string, unknown> | null;
  /** When the write happened. */
  readonly occurredAt: Date;
  /**
   * The row's tenant: the value of the capture's `tenant` attribute, as text (the row as
   * the write left it; for a delete, as it was), or null; absent when the capture declares
   * no `tenant`. The change's event is that tenant's.
   */
  readonly tenant?: string | null;
}

/** What an `extend` function adds to one change's event. */
export interface ChangeExtension {
  /** Keys added to the envelope (never one of its own: `ValidationError`). */
  readonly payload?: Record<string, unknown>;
  /** The event's headers. */
  readonly headers?: Record<string, string>;
  /**
   * The event's own columns (`defineOutbox({ eventColumns })`, the reference's
   * `extra_field_values`), checked as `fire(…, { columns })` checks them.
   */
  readonly columns?: Readonly<Record<string, EventColumnValue>>;
  /**
   * The event's tenant (`settings.tenancy` `'column'` or `'schema'`), over the row's tenant
   * attribute and the `withTenant()` scope around the write: the reference's
   * `extra_field_values` setting the outbox's tenant field, for a model whose rows hold the
   * tenant in no attribute of their own (read from a parent, say). `null` is the event of
   * no tenant. Checked as `fire(…, { tenant })` checks it. The envelope's `tenant` stays the
   * row's: it describes the change, not where its event is kept.
   */
  readonly tenant?: string | null;
}

/** The JSON form of a value nested in an attribute (an `undefined` property stays absent). */
type JsonValueForm<T> = 0 extends 1 & T
  ? T
  : T extends Date | bigint | Uint8Array
    ? string
    : T extends string
      ? T
      : T extends number
        ? number
        : T extends boolean
          ? boolean
          : T extends (...args: never[]) => unknown
            ? never
            : T extends readonly (infer U)[]
              ? JsonValueForm<U>[]
              : T extends object
                ? { [K in keyof T]: JsonValueForm<T[K]> }
                : T;

/**
 * A model attribute's TypeScript type in the JSON form the change envelope writes it:
 * `Date` as ISO text, `bigint` as decimal text, a `Buffer` as base64 text, arrays and
 * objects element by element, `undefined` as null; a number or boolean `CreationOptional`
 * drops its brand, a string one keeps it (its literal union intact — the brand is an
 * optional phantom property, so the type is assignable both ways). A decimal column typed `number`
 * in the model is still text in the envelope: codegen types DECIMAL and BIGINT
 * attributes as `string` from their DataType instead (see {@link CapturedAttribute}).
 *
 * @example
 * ```ts
 * type Row = { [K in keyof Attributes<Order>]: JsonForm<Attributes<Order>[K]> };
 * ```
 */
export type JsonForm<T> =
  JsonValueForm<T> extends infer J
    ? undefined extends J
      ? Exclude<J, undefined> | null
      : J
    : never;

/**
 * One captured attribute of the Sequelize model instance type `M` as the envelope's
 * `before`/`after` hold it: `JsonForm<Attributes<M>[K]>`, or `Fallback` where the model's
 * type does not declare `K` (the timestamps Sequelize adds, `createdAt`/`updatedAt`), which
 * codegen fills in from the attribute's DataType. What the generated row types are made of.
 */
export type CapturedAttribute<
  M extends Model,
  K extends string,
  Fallback = unknown,
> = K extends keyof Attributes<M> ? JsonForm<Attributes<M>[K]> : Fallback;

/** What a {@link ChangeSink} is told beside the changes. */
export interface ChangeSinkContext {
  /**
   * The transaction of the write the changes come from: write through it, and what the
   * sink writes commits with the row or not at all.
   */
  readonly transaction: Transaction;
  /** The Sequelize the captured model (and so the transaction) belongs to. */
  readonly sequelize: Sequelize;
  /** The captured model. */
  readonly model: CapturableModel;
  /** The model's label, `{app}.{ModelName}` (the changes' `model`). */
  readonly label: string;
}

/**
 * Where a capture hands its changes besides (or instead of) the outbox — the topic-outbox
 * reference's `ChangeSink`: an audit table, a search index's queue table, a projection.
 *
 * `write` is called once per captured statement, with that statement's changes (of the
 * captured operations, in row order, as {@link CapturedChange}s: the same values an
 * envelope is made of, each attribute in its JSON form), INSIDE the write's transaction
 * and before the write returns. Write through `context.transaction` and the sink's rows
 * commit with the change or not at all. A sink that throws aborts the write, as an
 * `inline` receiver does: the row is rolled back (its savepoint in a caller's
 * transaction, which stays usable) and the error reaches the caller. The changes follow
 * the capture's `fields`/`exclude` and `payload` (`before` and `after` as the payload mode
 * has them). A sink of something outside the database (an HTTP search index) belongs in a
 * durable receiver of the captured topics instead: it would be written even when the
 * transaction then rolls back.
 *
 * Given per capture (`capture(Model, { sink })`), or once for every capture of the outbox
 * (`defineOutbox({ sinks })`, called first).
 */
export interface ChangeSink {
  /** A name for errors and logs. */
  readonly name: string;
  /** Write one statement's changes, in `context.transaction`. */
  write(changes: readonly CapturedChange[], context: ChangeSinkContext): unknown;
}

/** Options of {@link capture}. */
export interface CaptureOptions {
  /**
   * The `{app}` part of the topic and the label (`shop` in `shop.order.updated`). Declared
   * here because a Sequelize model belongs to no app; needed when `topic` or `orderingKey`
   * name `{app}` (the defaults do).
   */
  readonly app?: string;
  /**
   * The operations captured.
   * @defaultValue `['inserted', 'updated', 'deleted']`
   */
  readonly operations?: readonly CaptureOperation[];
  /**
   * What an event holds of its row; see {@link CapturePayload}.
   * @defaultValue `'after'`
   */
  readonly payload?: CapturePayload;
  /** The attributes an event holds. @defaultValue every attribute of the model */
  readonly fields?: readonly string[];
  /** Attributes left out of the default ones (a password hash, a token) — not with `fields`. */
  readonly exclude?: readonly string[];
  /**
   * A template of `{app}`, `{model}` (the model's name in lower case), `{table}` and
   * `{operation}`. Lower case, dots between parts, so topic patterns (`shop.order.*`) match.
   * @defaultValue `'{app}.{model}.{operation}'`
   *
   * Or a function of the change giving its topic, for a topic the row decides (a tenant's,
   * a region's): the events it names are not declared by the capture — declare them in
   * `events` (with the envelope's schema, or your own), so receivers and the catalogue
   * know them; a name not declared fails the write.
   */
  readonly topic?: string | ((change: CapturedChange) => string);
  /**
   * A template of `{label}` (`shop.Order`), `{pk}` (a composite key's parts joined by `:`),
   * `{app}`, `{model}` and `{table}`, or `null` for no ordering. Over 255 characters a key
   * keeps its start and ends with `#` and the SHA-256 of the whole key.
   * @defaultValue `'{label}:{pk}'`: one row's events are delivered in order
   *
   * Or a function of the change giving its key (or null); a function's key is not
   * shortened: over 255 characters it fails the write with `ValidationError`.
   */
  readonly orderingKey?: string | null | ((change: CapturedChange) => string | null);
  /** A function of the change giving what its event adds; runs at the write, in its transaction. */
  readonly extend?: (
    change: CapturedChange,
  ) => ChangeExtension | undefined | Promise<ChangeExtension | undefined>;
  /** A function of one statement's changes giving each one's extension, in order; not with `extend`. */
  readonly extendMany?: (
    changes: readonly CapturedChange[],
  ) => readonly (ChangeExtension | undefined)[] | Promise<readonly (ChangeExtension | undefined)[]>;
  /**
   * A {@link ChangeSink} (or several, called in order) that is handed every captured
   * statement's changes in the write's own transaction, beside the outbox's events — or
   * instead of them, with `outbox: false`. Called after the outbox-wide sinks
   * (`defineOutbox({ sinks })`), which every capture hands its changes to; a sink listed
   * there is not listed here again.
   */
  readonly sink?: ChangeSink | readonly ChangeSink[];
  /**
   * Whether the capture writes outbox events. `false` hands the changes to its sinks alone
   * (`sink`, and the outbox-wide `defineOutbox({ sinks })`; at least one must be given):
   * no topic is declared (nor listed in the catalogue) and no event row is written, so
   * `app`, `topic` and `orderingKey` are not needed.
   * @defaultValue true
   */
  readonly outbox?: boolean;
  /**
   * The model's attribute naming the row's tenant (`'tenantId'`), on an outbox with
   * `settings.tenancy: 'column'`: each change's event is the row's tenant's (its keys and
   * ordering per tenant, `context.tenant` on delivery), whatever `withTenant()` block the
   * write runs in, and its envelope carries `tenant` (the value as text, or null).
   * @defaultValue none: the events belong to the tenant of the scope around the write
   */
  readonly tenant?: string;
}

/** What {@link capture} returns: a declaration for `defineOutbox({ capture: [...] })`. */
export interface CaptureDefinition {
  readonly [CAPTURE]: true;
  readonly model: CapturableModel;
  readonly options: CaptureOptions;
  /** A copy with other options (a model refining its base's capture); checked the same way. */
  replace(options: CaptureOptions): CaptureDefinition;
}

/** One capture, resolved: what the hooks need, computed once. */
export interface ResolvedCapture {
  readonly model: CapturableModel;
  /** `{app}.{ModelName}`, the envelope's `model`. */
  readonly label: string;
  readonly app: string | undefined;
  readonly table: string;
  readonly operations: ReadonlySet<CaptureOperation>;
  readonly payload: CapturePayload;
  /** The attributes an event holds, in declaration order. */
  readonly fields: readonly string[];
  readonly primaryKey: readonly string[];
  /** The topic (event name) of each captured operation; empty when `topicOf` names them. */
  readonly topics: Readonly<Partial<Record<CaptureOperation, string>>>;
  /** The topic function, when `topic` is one: called per change at the write. */
  readonly topicOf: ((change: CapturedChange) => string) | undefined;
  /** The ordering-key template or function, or null for none. */
  readonly orderingKey: string | null | ((change: CapturedChange) => string | null);
  /** `extend` as declared: what each captured change's event adds. */
  readonly extend: CaptureOptions['extend'];
  /** `extendMany` as declared: the extensions of one statement's changes, in order. */
  readonly extendMany: CaptureOptions['extendMany'];
  /**
   * The sinks the changes are handed to, in order: the outbox-wide ones
   * (`defineOutbox({ sinks })`, added by defineOutbox), then the capture's own; empty for none.
   */
  readonly sinks: readonly ChangeSink[];
  /** Whether the capture writes outbox events (`outbox` as declared). */
  readonly toOutbox: boolean;
  /** The attribute naming the row's tenant, or undefined (see `CaptureOptions.tenant`). */
  readonly tenant?: string;
}

/** Whether a value was made by {@link capture}. */
export function isCaptureDefinition(value: unknown): value is CaptureDefinition {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[CAPTURE] === true
  );
}

const TOPIC_PARTS = ['app', 'model', 'table', 'operation'] as const;
const KEY_PARTS = ['label', 'pk', 'app', 'model', 'table'] as const;
const OPTION_NAMES = [
  'app',
  'operations',
  'payload',
  'fields',
  'exclude',
  'topic',
  'orderingKey',
  'extend',
  'extendMany',
  'sink',
  'outbox',
  'tenant',
] as const;

/**
 * Capture a Sequelize model's changes: every ORM write of it (`create`, `save`, `update`,
 * `destroy`, `bulkCreate`, …) writes one event per changed row, in the write's own
 * transaction, whose payload is the change envelope (`model`, `operation`, `pk`,
 * `changed`, `before`, `after`, `occurred_at`). The model must be defined (its attributes
 * known) before the config is declared; `installCapture(outbox)` adds the hooks.
 *
 * @example
 * ```ts
 * capture(Order, { app: 'shop', payload: 'beforeAndAfter', exclude: ['secret'] })
 * // topics shop.order.inserted, shop.order.updated, shop.order.deleted
 * ```
 * @throws {ConfigurationError} naming the model and the option at fault.
 */
export function capture(model: CapturableModel, options: CaptureOptions = {}): CaptureDefinition {
  checkCapture(model, options);
  const definition: CaptureDefinition = {
    [CAPTURE]: true,
    model,
    options,
    replace(other) {
      const merged: Record<string, unknown> = { ...options };
      if ('fields' in other) delete merged.exclude;
      if ('exclude' in other) delete merged.fields;
      if ('extend' in other) delete merged.extendMany;
      if ('extendMany' in other) delete merged.extend;
      return capture(model, { ...merged, ...other } as CaptureOptions);
    },
  };
  return Object.freeze(definition);
}

function fail(model: CapturableModel, option: string, message: string): never {
  const name = typeof model?.name === 'string' ? model.name : String(model);
  throw new ConfigurationError(`capture(${name}).${option} ${message}`, {
    path: `capture(${name}).${option}`,
  });
}

function attributesOf(model: CapturableModel): Record<string, { type?: unknown }> {
  const attributes = typeof model?.getAttributes === 'function' ? model.getAttributes() : undefined;
  if (!attributes || Object.keys(attributes).length === 0) {
    throw new ConfigurationError(
      `capture(${model?.name ?? String(model)}) needs a Sequelize model defined (sequelize.define or Model.init) before the config is declared: it has no attributes`,
      { path: `capture(${model?.name})` },
    );
  }
  return attributes;
}

function checkCapture(model: CapturableModel, options: CaptureOptions): void {
  const attributes = attributesOf(model);
  const names = Object.keys(attributes);
  if (typeof options !== 'object' || options === null) fail(model, 'options', 'must be an object');
  for (const key of Object.keys(options)) {
    if (!(OPTION_NAMES as readonly string[]).includes(key)) {
      fail(model, key, `is not an option of capture (known: ${OPTION_NAMES.join(', ')})`);
    }
  }
  if (options.fields !== undefined && options.exclude !== undefined) {
    fail(model, 'fields', 'takes fields or exclude, not both');
  }
  if (options.extend !== undefined && options.extendMany !== undefined) {
    fail(model, 'extend', 'takes extend or extendMany, not both');
  }
  for (const option of ['extend', 'extendMany'] as const) {
    if (options[option] !== undefined && typeof options[option] !== 'function') {
      fail(model, option, 'must be a function');
    }
  }
  for (const option of ['fields', 'exclude'] as const) {
    const list = options[option];
    if (list === undefined) continue;
    if (!Array.isArray(list)) fail(model, option, 'must be an array of attribute names');
    for (const field of list) {
      if (!names.includes(field)) {
        fail(
          model,
          option,
          `names "${String(field)}", which ${model.name} does not have (its attributes: ${names.join(', ')})`,
        );
      }
    }
  }
  if (options.operations !== undefined) {
    if (!Array.isArray(options.operations) || options.operations.length === 0) {
      fail(model, 'operations', 'must be a non-empty array of "inserted", "updated", "deleted"');
    }
    for (const op of options.operations) {
      if (!CAPTURE_OPERATIONS.includes(op)) {
        fail(
          model,
          'operations',
          `names "${String(op)}"; the operations are "inserted", "updated" and "deleted"`,
        );
      }
    }
  }
  if (options.tenant !== undefined && !names.includes(options.tenant)) {
    fail(
      model,
      'tenant',
      `names ${JSON.stringify(options.tenant)}, which ${model.name} does not have (its attributes: ${names.join(', ')})`,
    );
  }
  if (
    options.payload !== undefined &&
    !['keys', 'after', 'beforeAndAfter'].includes(options.payload)
  ) {
    fail(
      model,
      'payload',
      `must be "keys", "after" or "beforeAndAfter" (got ${JSON.stringify(options.payload)})`,
    );
  }
  if (options.app !== undefined && (typeof options.app !== 'string' || options.app === '')) {
    fail(model, 'app', 'must be a non-empty string');
  }
  const sinks = sinksOf(options.sink);
  if (sinks === undefined) {
    fail(
      model,
      'sink',
      'must be a ChangeSink ({ name, write(changes, context) }) or an array of them',
    );
  }
  if (options.outbox !== undefined && typeof options.outbox !== 'boolean') {
    fail(model, 'outbox', 'must be true or false');
  }
  if (options.outbox === false) {
    // No events: the topic and the ordering key are never used. Whether a sink is left to
    // hand the changes to (its own, or the outbox's `sinks`) is checked by defineOutbox.
    return;
  }
  const topic = options.topic ?? '{app}.{model}.{operation}';
  if (typeof topic === 'function') {
    // a function of the change: its events are declared in `events`, checked at the write
  } else if (typeof topic !== 'string') {
    fail(model, 'topic', 'must be a template string or a function of the change');
  } else {
    checkTopicTemplate(model, topic, options);
  }
  if (typeof options.orderingKey === 'function') {
    // a function of the change: its key is checked at the write
  } else if (options.orderingKey !== undefined && options.orderingKey !== null) {
    if (typeof options.orderingKey !== 'string') {
      fail(model, 'orderingKey', 'must be a template string, a function of the change, or null');
    }
    checkTemplate(model, 'orderingKey', options.orderingKey, KEY_PARTS, options.app);
  } else if (options.orderingKey === undefined && options.app === undefined) {
    fail(
      model,
      'app',
      'is needed: the default ordering key {label}:{pk} names the app (pass app: "shop", or orderingKey)',
    );
  }
}

/** The sinks of `sink`, as a list; undefined for something that is no sink. */
function sinksOf(sink: CaptureOptions['sink']): readonly ChangeSink[] | undefined {
  if (sink === undefined) return [];
  const list = (Array.isArray(sink) ? sink : [sink]) as readonly ChangeSink[];
  return list.every(isChangeSink) ? list : undefined;
}

/** Whether a value is a {@link ChangeSink}: a non-empty `name` and a `write` function. */
export function isChangeSink(value: unknown): value is ChangeSink {
  const s = value as ChangeSink | null;
  return (
    typeof s === 'object' &&
    s !== null &&
    typeof s.write === 'function' &&
    typeof s.name === 'string' &&
    s.name !== ''
  );
}

function checkTopicTemplate(model: CapturableModel, topic: string, options: CaptureOptions): void {
  checkTemplate(model, 'topic', topic, TOPIC_PARTS, options.app);
  if (!topic.includes('{operation}') && (options.operations?.length ?? 3) > 1) {
    fail(
      model,
      'topic',
      `"${topic}" must name {operation}: each captured operation is an event of its own`,
    );
  }
}

function checkTemplate(
  model: CapturableModel,
  option: string,
  template: string,
  parts: readonly string[],
  app: string | undefined,
): void {
  for (const match of template.matchAll(/\{([^}]*)\}/g)) {
    const part = match[1] ?? '';
    if (!parts.includes(part)) {
      fail(
        model,
        option,
        `"${template}" names {${part}}; a ${option} template names ${parts.map((p) => `{${p}}`).join(', ')}`,
      );
    }
    if ((part === 'app' || part === 'label') && app === undefined) {
      fail(
        model,
        'app',
        `is needed: ${option} "${template}" names {${part}}, and a Sequelize model belongs to no app (pass app: "shop")`,
      );
    }
  }
}

function tableOf(model: CapturableModel): string {
  const table = model.getTableName?.();
  if (typeof table === 'string') return table;
  return table?.tableName ?? model.name;
}

function fill(template: string, parts: Record<string, string>): string {
  return template.replace(/\{([^}]*)\}/g, (_, part: string) => parts[part] ?? '');
}

/** Resolve a checked capture: its fields, keys and one topic per captured operation. */
export function resolveCapture(definition: CaptureDefinition): ResolvedCapture {
  const { model, options } = definition;
  const attributes = attributesOf(model);
  const names = Object.keys(attributes);
  const fields = options.fields
    ? names.filter((n) => options.fields!.includes(n))
    : names.filter((n) => !(options.exclude ?? []).includes(n));
  const table = tableOf(model);
  const app = options.app;
  const parts = {
    app: app ?? '',
    model: model.name.toLowerCase(),
    table,
  };
  const operations = new Set(options.operations ?? CAPTURE_OPERATIONS);
  const toOutbox = options.outbox !== false;
  const topics: Partial<Record<CaptureOperation, string>> = {};
  const topicOf = typeof options.topic === 'function' && toOutbox ? options.topic : undefined;
  for (const operation of topicOf || !toOutbox ? [] : operations) {
    topics[operation] = fill((options.topic as string | undefined) ?? '{app}.{model}.{operation}', {
      ...parts,
      operation,
    });
  }
  const primaryKey = model.primaryKeyAttributes?.length
    ? [...model.primaryKeyAttributes]
    : names.filter((n) => (attributes[n] as { primaryKey?: boolean }).primaryKey);
  if (primaryKey.length === 0) {
    fail(model, 'model', 'has no primary key; a captured row is named by its key');
  }
  return {
    model,
    label: app === undefined ? model.name : `${app}.${model.name}`,
    app,
    table,
    operations,
    payload: options.payload ?? 'after',
    fields,
    primaryKey,
    topics,
    topicOf,
    orderingKey: !toOutbox
      ? null
      : options.orderingKey === undefined
        ? '{label}:{pk}'
        : options.orderingKey,
    extend: options.extend,
    extendMany: options.extendMany,
    sinks: sinksOf(options.sink) ?? [],
    toOutbox,
    ...(options.tenant === undefined ? {} : { tenant: options.tenant }),
  };
}

/**
 * The JSON form a Sequelize attribute type (by its `key`) takes in a captured envelope:
 * what {@link attributeSchema} checks and what capture's own fast check
 * (`envelopeText`, src/capture/envelope.ts) tests, written once so the two never differ.
 */
export type AttributeKind = 'number' | 'float' | 'boolean' | 'string' | 'unknown';

/** The {@link AttributeKind} of a Sequelize type key (`'unknown'` for any other). */
export function attributeKind(key: string | undefined): AttributeKind {
  switch (key ?? '') {
    case 'INTEGER':
    case 'SMALLINT':
    case 'MEDIUMINT':
    case 'TINYINT':
      return 'number';
    case 'FLOAT':
    case 'DOUBLE':
    case 'REAL':
      return 'float';
    case 'BOOLEAN':
      return 'boolean';
    case 'STRING':
    case 'TEXT':
    case 'CHAR':
    case 'CITEXT':
    case 'UUID':
    case 'ENUM':
    case 'DECIMAL':
    case 'BIGINT':
    case 'DATE':
    case 'DATEONLY':
    case 'TIME':
    case 'BLOB':
      return 'string';
    default:
      return 'unknown';
  }
}

/** The JSON form's zod type of one Sequelize attribute type (by its `key`), nullable. */
function attributeSchema(type: unknown): z.ZodType {
  switch (attributeKind((type as { key?: string } | undefined)?.key)) {
    case 'number':
      return z.number().nullable();
    case 'float':
      return z.union([z.number(), z.enum(['NaN', 'Infinity', '-Infinity'])]).nullable();
    case 'boolean':
      return z.boolean().nullable();
    case 'string':
      return z.string().nullable();
    default:
      return z.unknown();
  }
}

/**
 * The payload schema of a captured topic: the envelope, its `before`/`after` objects of
 * the captured attributes in their JSON form (so the catalogue lists them and a removed
 * attribute is a breaking change there).
 */
export function envelopeSchema(resolved: ResolvedCapture): z.ZodType {
  const attributes = attributesOf(resolved.model);
  const shape: Record<string, z.ZodType> = {};
  for (const field of resolved.fields) shape[field] = attributeSchema(attributes[field]?.type);
  const row = z.object(shape).nullable().optional();
  return z.looseObject({
    model: z.string(),
    operation: z.enum(['inserted', 'updated', 'deleted']),
    pk: z.unknown(),
    changed: z.array(z.string()).nullable(),
    before: row,
    after: row,
    occurred_at: z.string(),
    ...(resolved.tenant === undefined ? {} : { tenant: z.string().nullable() }),
  });
}

/** The declared events of a capture: one per captured operation, named by its topic. */
export function captureEvents(resolved: ResolvedCapture): ResolvedEvent[] {
  const schema = envelopeSchema(resolved);
  return Object.entries(resolved.topics).map(([operation, topic]) => ({
    name: topic as string,
    version: 1,
    schema,
    retention: undefined,
    description: `A ${resolved.label} row ${operation} (change capture)`,
    upgrade: undefined,
    // The envelope is built in its JSON form already (attribute by attribute).
    codec: 'json' as const,
  }));
}
