import { z } from 'zod';
import { BUILTIN_CODECS, type PayloadCodec } from '../codec/payload-codec.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import {
  type CaptureDefinition,
  type ChangeSink,
  captureEvents,
  isCaptureDefinition,
  isChangeSink,
  type ResolvedCapture,
  resolveCapture,
} from './capture.js';
import { closestName, formatConfigPath } from './config-path.js';
import { type Duration, durationSchema, durationSeconds } from './duration.js';
import {
  type EventDefinition,
  isEventDefinition,
  type PayloadCodecName,
  type ResolvedEvent,
  rawEventOptions,
} from './event.js';
import {
  columnNameProblem,
  type EventColumnDeclaration,
  eventColumnsSchema,
  RESERVED_EVENT_COLUMNS,
  type ResolvedEventColumn,
  resolveEventColumns,
} from './event-columns.js';
import {
  type EventRef,
  type ExecutionSite,
  type FiringEvent,
  isReceiverDefinition,
  type ReceiverDefinition,
} from './receiver.js';
import { DEFAULT_SETTINGS, type OutboxSettings, type ResolvedSettings } from './settings.js';
import {
  AnyEvent,
  type DeliveryContext,
  type DeliveryFailure,
  type DeliveryMode,
  type Handler,
  type OutboxDelivery,
} from './types.js';

const CONFIG = Symbol.for('outboxkit.config');
const MAX_NAME = 255;

/**
 * The lane of every receiver that names none, and of every row no named lane takes
 * (including rows of a receiver since deleted). A relay started without a lane serves it.
 */
export const DEFAULT_LANE = 'default';

/** What `defineOutbox` takes: everything the outbox knows, declared in one place. */
export interface OutboxConfigInput<E extends Record<string, EventDefinition>> {
  /** Every event, keyed by its name (`shop.OrderPlaced`), which is also its topic. */
  readonly events: E;
  /** Every receiver, keyed by its receiver key (`mail.orderConfirmation`). */
  readonly receivers?: Record<string, ReceiverDefinition<never>>;
  /** Outbox-wide tuning. */
  readonly settings?: OutboxSettings;
  /**
   * Payload codecs of your own ({@link PayloadCodec}), which events then name
   * (`event({ codec: 'mine' })`, `settings.codec`) beside the built-in `json` and
   * `superjson`.
   *
   * Declared on the outbox, not handed to an event, because a row is decoded by the codec
   * name it recorded (its `outbox-codec` header), not by today's declaration: a codec
   * listed here stays known to every process that loads the config — the relay, `replay`,
   * `assertFired` — also after the last event naming it moved to another codec, so the
   * rows it wrote keep decoding. Keep it listed while such rows may be read. Each name once,
   * and none of the built-in ones.
   */
  readonly codecs?: readonly PayloadCodec[];
  /**
   * Sequelize models whose every ORM write writes an event per changed row (`capture(Model,
   * { ... })`); their topics become declared events of this config.
   */
  readonly capture?: readonly CaptureDefinition[];
  /**
   * Change sinks every capture of this outbox hands its changes to (the topic-outbox
   * reference's `Meta.change_capture` declared once on an abstract base model, which gives
   * every model built on it one sink): an audit trail of every captured model, declared
   * once rather than on each `capture(Model, { sink })`.
   *
   * Called in the order listed, BEFORE each capture's own `sink`s (the general before the
   * particular, as a base model's capture before a model's own), once per captured
   * statement, in the write's transaction, after the capture's events; a throw aborts the
   * write, as a capture's own sink does. Each capture's changes follow its own
   * `fields`/`exclude` and `payload`. A capture with `outbox: false` needs no sink of its
   * own when one is listed here. Listing a sink here and in a capture's `sink` is refused
   * (it would be handed each change twice), and so are sinks with no capture to feed.
   */
  readonly sinks?: readonly ChangeSink[];
  /**
   * The event's own columns on the events table (the reference's `extra_field_values`):
   * what an event is about (`order_id: { type: 'bigint', index: true }`), filled by
   * `fire(…, { columns })` and capture's `extend`, added by `migrate`, carried on the
   * delivered event's `columns` and narrowing the operator's operations. Always nullable.
   * @defaultValue none
   */
  readonly eventColumns?: Readonly<Record<string, EventColumnDeclaration>>;
}

/** One declared event, resolved (declared in event.ts, where capture.ts can read it too). */
export type { ResolvedEvent } from './event.js';

/**
 * When a scheduled receiver's delivery comes due: a delay counted from the event's
 * `occurredAt`, or a function of the event naming the time.
 */
export type ResolvedDue =
  | { readonly kind: 'delay'; readonly seconds: number }
  | {
      readonly kind: 'at';
      /** The due time of an event's row, computed at fire time. */
      readonly at: (event: FiringEvent) => Date | Promise<Date>;
    };

/** One declared receiver, resolved: defaults filled in, its transport normalised. */
export interface ResolvedReceiver {
  /** The key on its delivery rows. */
  readonly key: string;
  /** The event it listens to; `undefined` for a wildcard. */
  readonly event: string | undefined;
  /** Declared for `AnyEvent` or a topic pattern: owed the events it matches, named by none. */
  readonly wildcard: boolean;
  /** The topic pattern (`'library.*'`) a wildcard was declared for; `undefined` for `AnyEvent`. */
  readonly pattern: string | undefined;
  readonly mode: DeliveryMode;
  /** `handler` runs a function in a transaction; `delivery` sends through a transport. */
  readonly kind: 'handler' | 'delivery';
  readonly handle: Handler | undefined;
  readonly delivery: OutboxDelivery | undefined;
  readonly maxAttempts: number;
  readonly leaseSeconds: number | undefined;
  readonly backoff: { readonly baseSeconds?: number; readonly capSeconds?: number };
  readonly timeoutSeconds: number | undefined;
  /** Called after a failed attempt is recorded, outside any transaction; a throw is logged. */
  readonly onFailure: ((failure: DeliveryFailure) => unknown) | undefined;
  /** The lane whose relays claim its rows; {@link DEFAULT_LANE} unless declared. */
  readonly lane: string;
  /** Also attempted right after commit, in the firing process. */
  readonly eager: boolean;
  /** Where it runs: in the relay, or handed to the outbox's task backend. */
  readonly site: ExecutionSite;
  /** How long a row may stay owed while it defers without counting, in seconds. */
  readonly giveUpAfterSeconds: number | undefined;
  /** A fan-out's targets, called at fire time inside the caller's transaction. */
  readonly targets:
    | ((
        event: FiringEvent,
        context: DeliveryContext,
      ) => Iterable<string> | Promise<Iterable<string>>)
    | undefined;
  /** A scheduled reaction's due time. */
  readonly due: ResolvedDue | undefined;
}

/** Who receives one event, split by mode; precomputed so `fire()` does no lookups. */
export interface EventRoute {
  readonly event: ResolvedEvent;
  readonly inline: readonly ResolvedReceiver[];
  readonly onCommit: readonly ResolvedReceiver[];
  readonly durable: readonly ResolvedReceiver[];
  /**
   * Whether a durable receiver of it is a fan-out or scheduled (`targets` or `due`), so
   * planning must call their functions; false keeps `fire()`'s plan a plain map.
   */
  readonly schedules: boolean;
  /**
   * The same event owed to nobody: the route `fire()` plans when a `suppressed()` block
   * names the event (no receiver of any mode, nothing to schedule). Derived from the
   * route, so it is built beside it once, here; a silenced route is its own `silenced`.
   */
  readonly silenced: EventRoute;
}

/**
 * A validated configuration, as `defineOutbox` returns it. Branded: `createOutbox` only
 * takes what `defineOutbox` made, so an unchecked object literal never reaches the runtime.
 */
export interface OutboxConfig<
  E extends Record<string, EventDefinition> = Record<string, EventDefinition>,
> {
  readonly [CONFIG]: true;
  /** The event definitions as declared (for types). */
  readonly events: E;
  /** Every event, sorted by name. */
  readonly eventList: readonly ResolvedEvent[];
  /** Every receiver, sorted by key. */
  readonly receivers: readonly ResolvedReceiver[];
  /**
   * Every lane a relay may serve, sorted: {@link DEFAULT_LANE} and each lane a durable
   * receiver declares. A relay asked for any other lane is refused at start, because it
   * would claim nothing and look healthy doing it.
   */
  readonly lanes: readonly string[];
  readonly settings: ResolvedSettings;
  /** Every declared change capture, resolved, in declaration order. */
  readonly captures: readonly ResolvedCapture[];
  /**
   * Every payload codec this outbox knows, by name: the built-in `json` and `superjson`,
   * then those declared in `codecs`. What a stored row's `outbox-codec` header is looked
   * up in.
   */
  readonly codecs: ReadonlyMap<string, PayloadCodec>;
  /** The declared event columns (`eventColumns`), sorted by name; empty for none. */
  readonly eventColumns: readonly ResolvedEventColumn[];
  /** The route of a declared event, or undefined for a name never declared. */
  route(name: string): EventRoute | undefined;
  /** The receiver with this key, or undefined. */
  receiver(key: string): ResolvedReceiver | undefined;
}

/** Whether a value was made by {@link defineOutbox}. */
export function isOutboxConfig(value: unknown): value is OutboxConfig {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[CONFIG] === true
  );
}

const positiveInt = (what: string) =>
  z
    .number({ error: `must be ${what}` })
    .int({ error: `must be ${what}` })
    .min(1, { error: `must be ${what}` });
const positiveNumber = (what: string) =>
  z
    .number({ error: `must be ${what}` })
    .positive({ error: `must be ${what}` })
    .finite();

const backoffSchema = z.strictObject({
  baseSeconds: positiveNumber('a number of seconds > 0').optional(),
  capSeconds: positiveNumber('a number of seconds > 0').optional(),
});

// A name here; whether a codec of the outbox has it is checked once the codecs are known.
const codecSchema = z.string({
  error: 'must be a codec name: "json", "superjson" or one declared in defineOutbox({ codecs })',
});

/** What a codec of the app's is named: it goes into a header and the catalogue. */
const CODEC_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

const settingsSchema = z.strictObject({
  codec: codecSchema.optional(),
  leaseSeconds: positiveNumber('a number of seconds > 0').optional(),
  batchSize: positiveInt('an integer from 1 to 10000')
    .max(10_000, { error: 'must be an integer from 1 to 10000' })
    .optional(),
  pollIntervalMs: positiveNumber('a number of milliseconds > 0').optional(),
  backoff: backoffSchema.optional(),
  maxRetryAfterSeconds: positiveNumber('a number of seconds > 0').optional(),
  deliveryTimeoutSeconds: positiveNumber('a number of seconds > 0').optional(),
  retentionDays: positiveNumber('a number of days > 0').optional(),
  pruneBatchRows: positiveInt('an integer from 1 to 100000')
    .max(100_000, { error: 'must be an integer from 1 to 100000' })
    .optional(),
  relayPrune: z.boolean({ error: 'must be true or false' }).optional(),
  relayPruneSeconds: positiveNumber('a number of seconds > 0').optional(),
  tenancy: z
    .enum(['none', 'column', 'schema'], { error: 'must be "none", "column" or "schema"' })
    .optional(),
});

const retentionSchema = z.union(
  [
    z.literal('succeeded'),
    z.literal('settled'),
    z.strictObject({ days: positiveNumber('a number of days > 0') }),
  ],
  { error: 'must be "succeeded", "settled" or { days: number }' },
);

const eventOptionsSchema = z.strictObject({
  // `instanceof` holds across copies of zod 4 (its classes check a brand), not for zod 3.
  schema: z.custom<z.ZodType>((v) => v instanceof z.ZodType, {
    error:
      "must be a zod 4 schema: z.object({ ... }) from import { z } from 'zod', with zod@^4 installed",
  }),
  version: positiveInt('an integer ≥ 1').optional(),
  codec: codecSchema.optional(),
  retention: retentionSchema.optional(),
  description: z.string().optional(),
  upgrade: z
    .custom<(...args: never[]) => unknown>((v) => typeof v === 'function', {
      error: 'must be a function (payload, fromVersion) => payload',
    })
    .optional(),
});

const fn = (what: string) =>
  z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', {
    error: `must be ${what}`,
  });

const receiverOptionsSchema = z
  .strictObject({
    handle: fn('a function (event, context) => void').optional(),
    deliver: z
      .custom<unknown>(
        (v) =>
          typeof v === 'function' ||
          (typeof v === 'object' &&
            v !== null &&
            (typeof (v as OutboxDelivery).deliver === 'function' ||
              typeof (v as OutboxDelivery).deliverBatch === 'function')),
        {
          error: 'must be an async function or an OutboxDelivery with deliver() or deliverBatch()',
        },
      )
      .optional(),
    mode: z
      .enum(['durable', 'inline', 'onCommit'], {
        error: 'must be "durable", "inline" or "onCommit"',
      })
      .optional(),
    key: z
      .string({ error: 'must be a string' })
      .min(1, { error: 'must not be empty' })
      .max(MAX_NAME, { error: `must be at most ${MAX_NAME} characters (the column's width)` })
      .optional(),
    maxAttempts: positiveInt('an integer ≥ 1').optional(),
    leaseSeconds: positiveNumber('a number of seconds > 0').optional(),
    backoff: backoffSchema.optional(),
    onFailure: fn('a function (failure) => void').optional(),
    timeoutSeconds: positiveNumber('a number of seconds > 0').optional(),
    lane: z
      .string({ error: 'must be a string' })
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]*$/, {
        error: 'must be a lane name: letters, digits and _ . : - (starting with a letter or digit)',
      })
      .max(100, { error: 'must be at most 100 characters' })
      .optional(),
    eager: z.boolean({ error: 'must be true or false' }).optional(),
    site: z.enum(['relay', 'task'], { error: 'must be "relay" or "task"' }).optional(),
    giveUpAfter: durationSchema.optional(),
    targets: fn('a function (event, context) => string[]').optional(),
    due: z
      .union([durationSchema, fn('a function (event) => Date')], {
        error: 'must be a duration such as { hours: 48 } or a function (event) => Date',
      })
      .optional(),
  })
  .superRefine((value, ctx) => {
    if (value.handle === undefined && value.deliver === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'needs either handle (a function) or deliver (a transport)',
      });
    }
    if (value.handle !== undefined && value.deliver !== undefined) {
      ctx.addIssue({ code: 'custom', message: 'takes handle or deliver, not both' });
    }
    const nonDurable = value.mode !== undefined && value.mode !== 'durable';
    for (const option of ['targets', 'due', 'lane', 'eager', 'giveUpAfter', 'site'] as const) {
      if (
        nonDurable &&
        value[option] !== undefined &&
        value[option] !== false &&
        !(option === 'site' && value.site === 'relay')
      ) {
        ctx.addIssue({
          code: 'custom',
          path: [option],
          message: `needs a durable receiver (mode is "${value.mode}"): ${DURABLE_ONLY[option]}`,
        });
      }
    }
    if (value.due !== undefined && value.eager === true) {
      ctx.addIssue({
        code: 'custom',
        path: ['due'],
        message:
          'cannot be combined with eager: true, which means "attempt it at commit"; drop one of them',
      });
    }
    if (value.site === 'task' && value.eager === true) {
      ctx.addIssue({
        code: 'custom',
        path: ['site'],
        message:
          'cannot be "task" beside eager: true, which means "attempt it in the firing process"; a task runs in the task backend\'s worker; drop one of them',
      });
    }
    if (value.due !== undefined && value.targets !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['due'],
        message:
          'cannot be combined with targets: a recipient set resolved at fire time would be stale by the due time; fire a follow-up event whose targets resolve when it is due',
      });
    }
    if (value.deliver !== undefined && value.mode !== undefined && value.mode !== 'durable') {
      ctx.addIssue({
        code: 'custom',
        path: ['mode'],
        message: `must be "durable" for a transport (got "${value.mode}"): only the relay sends through deliver`,
      });
    }
    const b = value.backoff;
    if (
      b?.baseSeconds !== undefined &&
      b.capSeconds !== undefined &&
      b.capSeconds < b.baseSeconds
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['backoff', 'capSeconds'],
        message: `must be ≥ backoff.baseSeconds (${b.baseSeconds})`,
      });
    }
  });

/** Why each timing option needs a row (the message of its refusal beside another mode). */
const DURABLE_ONLY = {
  targets: 'one delivery row is written per target, and inline/onCommit receivers have none',
  due: 'a scheduled delivery waits in its row, and inline/onCommit receivers have none',
  lane: 'a lane names the relays that claim rows, and inline/onCommit receivers have none',
  eager: 'onCommit already runs after commit, and inline inside the transaction',
  giveUpAfter: 'it bounds deferrals the relay records, and inline/onCommit receivers have none',
  site: 'a task backend is handed a claimed delivery row, and inline/onCommit receivers have none',
} as const;

/** The kind of a nested options object an unknown key was found in, by its last path key. */
function nestedKind(path: readonly PropertyKey[]): string | undefined {
  const last = path[path.length - 1];
  if (last === 'backoff') return 'backoff';
  if (last === 'due' || last === 'giveUpAfter') return 'duration';
  return undefined;
}

const KNOWN_KEYS: Record<string, readonly string[]> = {
  backoff: ['baseSeconds', 'capSeconds'],
  duration: ['days', 'hours', 'minutes', 'seconds', 'milliseconds'],
  root: ['events', 'receivers', 'settings', 'capture', 'sinks', 'codecs', 'eventColumns'],
  settings: Object.keys(settingsSchema.shape),
  event: Object.keys(eventOptionsSchema.shape),
  receiver: Object.keys(receiverOptionsSchema.shape),
  eventColumn: ['type', 'index'],
};

/**
 * Turn zod issues into one ConfigurationError whose message lists every problem, each with
 * its config path, what was expected, what was found, and (for a typo) the likely fix.
 */
function raise(issues: readonly z.core.$ZodIssue[], prefix: PropertyKey[], kind: string): never {
  const lines = issues.map((issue) => {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      return issue.keys
        .map((key) => {
          const known = KNOWN_KEYS[nestedKind(path) ?? kind] ?? [];
          const hint = closestName(key, known);
          const where = formatConfigPath(path);
          return `${where} has an unknown option "${key}"${hint ? ` — did you mean "${hint}"?` : ''} (known: ${known.join(', ')})`;
        })
        .join('\n');
    }
    const got = 'input' in issue ? describe(issue.input) : undefined;
    return `${formatConfigPath(path)} ${issue.message}${got === undefined ? '' : ` (got ${got})`}`;
  });
  throw new ConfigurationError(`Invalid outbox config:\n  ${lines.join('\n  ')}`, {
    path: formatConfigPath([...prefix, ...(issues[0]?.path ?? [])]),
  });
}

function describe(value: unknown): string {
  const schema = schemaKind(value);
  if (schema) return schema;
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'string')
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (value === undefined) return 'undefined';
  try {
    const text = JSON.stringify(value);
    return text.length > 60 ? `${text.slice(0, 60)}…` : text;
  } catch {
    return typeof value;
  }
}

/**
 * Name a schema that is not a zod 4 one, so the message says which library or major was
 * found: a zod 3 schema has `_def` and no `_zod`; a zod/mini one lacks the methods; any
 * other Standard Schema names its vendor.
 */
function schemaKind(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as { _def?: unknown; _zod?: unknown; '~standard'?: { vendor?: unknown } };
  if (v._def !== undefined && v._zod === undefined) return 'a zod 3 schema';
  if (v._zod !== undefined)
    return value instanceof z.ZodType ? 'a zod schema' : 'a zod/mini schema';
  const vendor = v['~standard']?.vendor;
  return typeof vendor === 'string' ? `a ${vendor} schema` : undefined;
}

function configError(path: PropertyKey[], message: string): ConfigurationError {
  const where = formatConfigPath(path);
  return new ConfigurationError(`Invalid outbox config:\n  ${where} ${message}`, { path: where });
}

/**
 * Declare the outbox: its events, its receivers and its settings. The result is what
 * `createOutbox` and `npx outbox codegen` read.
 *
 * Everything is validated here, with zod, so a typo fails at start-up and names its
 * config path and the fix: unknown keys are rejected (with a "did you mean"), every
 * number is range-checked, a receiver naming an undeclared event is refused, and names
 * and keys are held to the 255 characters their columns hold.
 *
 * @throws {ConfigurationError} listing every problem found.
 */
export function defineOutbox<const E extends Record<string, EventDefinition>>(
  input: OutboxConfigInput<E>,
): OutboxConfig<E> {
  const root = z
    .strictObject(
      {
        events: z.record(z.string(), z.unknown(), {
          error: 'must be an object of event({ ... }) by name',
        }),
        receivers: z
          .record(z.string(), z.unknown(), { error: 'must be an object of receiver(...) by key' })
          .optional(),
        settings: z.unknown().optional(),
        capture: z
          .array(z.unknown(), { error: 'must be an array of capture(Model, { ... })' })
          .optional(),
        sinks: z
          .array(z.unknown(), {
            error: 'must be an array of ChangeSink ({ name, write(changes, context) })',
          })
          .optional(),
        codecs: z
          .array(z.unknown(), {
            error: 'must be an array of PayloadCodec ({ name, encode, decode })',
          })
          .optional(),
        eventColumns: z.unknown().optional(),
      },
      {
        error:
          'must be an object { events, receivers?, settings?, capture?, sinks?, codecs?, eventColumns? }',
      },
    )
    .safeParse(input, { reportInput: true });
  if (!root.success) raise(root.error.issues, [], 'root');

  const settingsResult = settingsSchema.safeParse(input.settings ?? {}, { reportInput: true });
  if (!settingsResult.success) raise(settingsResult.error.issues, ['settings'], 'settings');
  const s = settingsResult.data;
  const settings: ResolvedSettings = {
    ...DEFAULT_SETTINGS,
    ...stripUndefined(s),
    backoff: { ...DEFAULT_SETTINGS.backoff, ...stripUndefined(s.backoff ?? {}) },
  };
  if (settings.backoff.capSeconds < settings.backoff.baseSeconds) {
    throw configError(
      ['settings', 'backoff', 'capSeconds'],
      `must be ≥ settings.backoff.baseSeconds (${settings.backoff.baseSeconds})`,
    );
  }
  const codecs = resolveCodecs(input.codecs ?? []);
  checkCodecName(codecs, settings.codec, ['settings', 'codec']);

  const declaredColumns: unknown = input.eventColumns;
  const columnNames =
    typeof declaredColumns === 'object' &&
    declaredColumns !== null &&
    !Array.isArray(declaredColumns)
      ? Object.keys(declaredColumns)
      : [];
  for (const name of columnNames) {
    const problem = columnNameProblem(name);
    if (problem) throw configError(['eventColumns', name], problem);
  }
  const columnsResult = eventColumnsSchema.safeParse(input.eventColumns ?? {}, {
    reportInput: true,
  });
  if (!columnsResult.success) raise(columnsResult.error.issues, ['eventColumns'], 'eventColumn');
  const eventColumns = resolveEventColumns(columnsResult.data);
  for (const c of eventColumns) {
    if (RESERVED_EVENT_COLUMNS.includes(c.name)) {
      throw configError(
        ['eventColumns', c.name],
        `is a column of the outbox's own (${RESERVED_EVENT_COLUMNS.join(', ')}); name the event column otherwise, e.g. "${c.name}_ref"`,
      );
    }
  }

  const events = new Map<string, ResolvedEvent>();
  const byDefinition = new Map<EventDefinition, string>();
  for (const [name, definition] of Object.entries(input.events)) {
    const path = ['events', name];
    if (name.length === 0 || name.length > MAX_NAME) {
      throw configError(
        path,
        `is not a valid event name: it must be 1 to ${MAX_NAME} characters (got ${name.length})`,
      );
    }
    if (!isEventDefinition(definition)) {
      throw configError(path, `must be built with event({ schema }) (got ${describe(definition)})`);
    }
    const twin = byDefinition.get(definition);
    if (twin !== undefined) {
      throw configError(
        path,
        `is the same event(...) definition as events["${twin}"]; declare each event once (a receiver given the definition could not tell which name it means), or call event() again for a second event`,
      );
    }
    const parsed = eventOptionsSchema.safeParse(rawEventOptions(definition), { reportInput: true });
    if (!parsed.success) raise(parsed.error.issues, path, 'event');
    const codec = definition.codec ?? settings.codec;
    if (definition.codec !== undefined) checkCodecName(codecs, codec, [...path, 'codec']);
    // A codec of the app's carries what it carries: fire() checks its round trip.
    const problem = BUILTIN_CODECS.has(codec)
      ? findUnroundtrippable(definition.schema, [], codec)
      : undefined;
    if (problem) throw configError([...path, 'schema', ...problem.path], problem.message);
    events.set(name, {
      name,
      version: definition.version,
      schema: definition.schema,
      retention: definition.retention,
      description: definition.description,
      upgrade: definition.upgrade,
      codec,
    });
    byDefinition.set(definition, name);
  }

  const captures = resolveCaptures(input.capture ?? [], events, outboxSinks(input));
  captures.forEach((c, i) => {
    if (c.tenant !== undefined && settings.tenancy !== 'column') {
      throw configError(
        ['capture', i, 'tenant'],
        settings.tenancy === 'schema'
          ? `names the tenant attribute "${c.tenant}" of ${c.model.name}, but this outbox keeps a schema per tenant, where a row holds no tenant: the change is the tenant's of the withTenant() block around the write, and is written to its schema; drop tenant`
          : `names the tenant attribute "${c.tenant}" of ${c.model.name}, but this outbox keeps no tenants; declare settings: { tenancy: 'column' }`,
      );
    }
  });

  const receivers: ResolvedReceiver[] = [];
  const keys = new Map<string, string>();
  for (const [configKey, definition] of Object.entries(input.receivers ?? {})) {
    const path = ['receivers', configKey];
    if (!isReceiverDefinition(definition)) {
      throw configError(
        path,
        `must be built with receiver(event, { handle }) (got ${describe(definition)})`,
      );
    }
    const parsed = receiverOptionsSchema.safeParse(definition.options, { reportInput: true });
    if (!parsed.success) raise(parsed.error.issues, path, 'receiver');
    const o = definition.options;
    const key = o.key ?? configKey;
    if (key.length === 0 || key.length > MAX_NAME) {
      throw configError(
        path,
        `is not a valid receiver key: it must be 1 to ${MAX_NAME} characters (got ${key.length}); pass key: '…' to shorten it`,
      );
    }
    const clash = keys.get(key);
    if (clash !== undefined) {
      throw configError(
        [...path, 'key'],
        `"${key}" is already the key of receivers["${clash}"]; every receiver key must be unique`,
      );
    }
    keys.set(key, configKey);
    const ref = resolveEventRef(definition.event, events, byDefinition, path);
    const delivery = o.deliver === undefined ? undefined : normaliseDelivery(o.deliver, key);
    receivers.push({
      key,
      event: ref.event,
      wildcard: ref.event === undefined,
      pattern: ref.pattern,
      mode: o.mode ?? 'durable',
      kind: o.handle ? 'handler' : 'delivery',
      handle: o.handle as Handler | undefined,
      delivery,
      maxAttempts: o.maxAttempts ?? 5,
      leaseSeconds: o.leaseSeconds,
      backoff: o.backoff ?? {},
      timeoutSeconds: o.timeoutSeconds,
      onFailure: o.onFailure,
      lane: o.lane ?? DEFAULT_LANE,
      eager: o.eager ?? false,
      site: o.site ?? 'relay',
      giveUpAfterSeconds: o.giveUpAfter === undefined ? undefined : durationSeconds(o.giveUpAfter),
      targets: o.targets as ResolvedReceiver['targets'],
      due: resolveDue(
        o.due as Duration | ((event: FiringEvent) => Date | Promise<Date>) | undefined,
      ),
    });
  }
  receivers.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

  const routes = new Map<string, EventRoute>();
  for (const event of events.values()) {
    const mine = receivers.filter((r) => matches(r, event.name));
    const durable = mine.filter((r) => r.mode === 'durable');
    routes.set(event.name, {
      event,
      inline: mine.filter((r) => r.mode === 'inline'),
      onCommit: mine.filter((r) => r.mode === 'onCommit'),
      durable,
      schedules: durable.some((r) => r.targets !== undefined || r.due !== undefined),
      silenced: silencedRoute(event),
    });
  }
  const byKey = new Map(receivers.map((r) => [r.key, r]));
  const eventList = [...events.values()].sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );

  return Object.freeze({
    [CONFIG]: true as const,
    events: input.events,
    eventList,
    receivers,
    lanes: [
      ...new Set([
        DEFAULT_LANE,
        ...receivers.filter((r) => r.mode === 'durable').map((r) => r.lane),
      ]),
    ].sort(),
    settings,
    captures,
    codecs,
    eventColumns,
    route: (name: string) => routes.get(name),
    receiver: (key: string) => byKey.get(key),
  });
}

/**
 * The outbox's codecs by name: the built-in ones, then the declared ones (each a
 * PayloadCodec, named once, none by a built-in name).
 */
function resolveCodecs(declared: readonly PayloadCodec[]): ReadonlyMap<string, PayloadCodec> {
  const codecs = new Map(BUILTIN_CODECS);
  declared.forEach((codec, i) => {
    const path = ['codecs', i];
    const c = codec as Partial<PayloadCodec> | null;
    if (
      typeof c !== 'object' ||
      c === null ||
      typeof c.encode !== 'function' ||
      typeof c.decode !== 'function' ||
      (c.bodySchema !== undefined && typeof c.bodySchema !== 'function')
    ) {
      throw configError(
        path,
        `must be a PayloadCodec ({ name, encode(payload, root), decode(stored), bodySchema? }) (got ${describe(codec)})`,
      );
    }
    if (typeof c.name !== 'string' || !CODEC_NAME.test(c.name)) {
      throw configError(
        [...path, 'name'],
        `must be a codec name: 1 to 100 letters, digits and _ . - (got ${describe(c.name)}); it is written on every row the codec encodes`,
      );
    }
    const taken = codecs.get(c.name);
    if (taken !== undefined) {
      throw configError(
        [...path, 'name'],
        BUILTIN_CODECS.has(c.name)
          ? `is "${c.name}", the name of a built-in codec; name yours otherwise (rows record the name, and "${c.name}" rows must decode as ${c.name})`
          : `is "${c.name}", which codecs[${declared.indexOf(taken)}] is named already; every codec needs a name of its own (rows record it)`,
      );
    }
    codecs.set(c.name, codec);
  });
  return codecs;
}

/** Refuse a codec name no codec of the outbox has, naming those it has. */
function checkCodecName(
  codecs: ReadonlyMap<string, PayloadCodec>,
  name: string,
  path: PropertyKey[],
): void {
  if (codecs.has(name)) return;
  const known = [...codecs.keys()].map((n) => `"${n}"`).join(', ');
  const hint = closestName(name, [...codecs.keys()]);
  throw configError(
    path,
    `names the codec "${name}", which this outbox does not have${hint ? ` — did you mean "${hint}"?` : ''} (it has ${known}); declare a codec of your own in defineOutbox({ codecs: [...] })`,
  );
}

/** The route of an event owed to no receiver: what a `suppressed()` block leaves of it. */
function silencedRoute(event: ResolvedEvent): EventRoute {
  const quiet: { -readonly [K in keyof EventRoute]: EventRoute[K] } = {
    event,
    inline: [],
    onCommit: [],
    durable: [],
    schedules: false,
    silenced: undefined as unknown as EventRoute,
  };
  quiet.silenced = quiet;
  return quiet;
}

/**
 * The outbox-wide change sinks (`defineOutbox({ sinks })`), checked: each a ChangeSink,
 * each once, and at least one capture to feed them.
 */
function outboxSinks(input: OutboxConfigInput<Record<string, EventDefinition>>): ChangeSink[] {
  const sinks = input.sinks ?? [];
  const names = new Set<string>();
  sinks.forEach((sink, i) => {
    if (!isChangeSink(sink)) {
      throw configError(
        ['sinks', i],
        `must be a ChangeSink ({ name, write(changes, context) }) (got ${describe(sink)})`,
      );
    }
    if (names.has(sink.name)) {
      throw configError(
        ['sinks', i],
        `is a second sink named "${sink.name}"; list each sink once, under a name of its own`,
      );
    }
    names.add(sink.name);
  });
  if (sinks.length > 0 && (input.capture ?? []).length === 0) {
    throw configError(
      ['sinks'],
      `lists ${sinks.map((s) => `"${s.name}"`).join(', ')}, but no model is captured: a sink is handed the changes of the captures (declare capture: [capture(Model, { ... })])`,
    );
  }
  return [...sinks];
}

/**
 * Resolve the captures and declare their topics as events (in `events`), refusing a model
 * captured twice and a topic that is already an event's name. Each capture's sinks become
 * the outbox-wide ones, then its own.
 */
function resolveCaptures(
  list: readonly CaptureDefinition[],
  events: Map<string, ResolvedEvent>,
  outboxWide: readonly ChangeSink[],
): ResolvedCapture[] {
  const seen = new Set<unknown>();
  return list.map((definition, i) => {
    const path = ['capture', i];
    if (!isCaptureDefinition(definition)) {
      throw configError(
        path,
        `must be built with capture(Model, { ... }) (got ${describe(definition)})`,
      );
    }
    if (seen.has(definition.model)) {
      throw configError(
        path,
        `captures ${definition.model.name} a second time; declare one capture per model (use .replace(options) to refine one)`,
      );
    }
    seen.add(definition.model);
    const own = resolveCapture(definition);
    const twice = own.sinks.find((sink) => outboxWide.includes(sink));
    if (twice) {
      throw configError(
        [...path, 'sink'],
        `of ${definition.model.name} lists the sink "${twice.name}", which defineOutbox({ sinks }) already hands every capture's changes to; drop it from one of the two`,
      );
    }
    const sinks = outboxWide.length === 0 ? own.sinks : [...outboxWide, ...own.sinks];
    if (!own.toOutbox && sinks.length === 0) {
      throw configError(
        [...path, 'outbox'],
        `of ${definition.model.name} is false and no sink is given (its sink, or defineOutbox({ sinks })): the capture would write nothing`,
      );
    }
    const resolved: ResolvedCapture = sinks === own.sinks ? own : { ...own, sinks };
    for (const event of captureEvents(resolved)) {
      if (events.has(event.name)) {
        throw configError(
          path,
          `captures ${definition.model.name} under the topic "${event.name}", which is already a declared event; pass topic: '…' to name it otherwise`,
        );
      }
      events.set(event.name, event);
    }
    return resolved;
  });
}

/** Whether a receiver is owed events of this name. */
function matches(r: ResolvedReceiver, name: string): boolean {
  if (!r.wildcard) return r.event === name;
  return r.pattern === undefined || name.startsWith(r.pattern.slice(0, -1));
}

function resolveDue(
  due: Duration | ((event: FiringEvent) => Date | Promise<Date>) | undefined,
): ResolvedDue | undefined {
  if (due === undefined) return undefined;
  if (typeof due === 'function') return { kind: 'at', at: due };
  return { kind: 'delay', seconds: durationSeconds(due) };
}

/**
 * Check a topic pattern: a prefix ending in one `*`, `_` and `%` plain characters; a `*`
 * or `?` anywhere else is refused (it would read as a glob we do not implement).
 * @returns an error message, or undefined for a valid pattern.
 */
export function topicPatternProblem(pattern: string): string | undefined {
  const body = pattern.slice(0, -1);
  if (!pattern.endsWith('*') || body.includes('*') || pattern.includes('?')) {
    return `"${pattern}" is not a topic pattern: only a prefix ending in one * is (e.g. "library.*"); * and ? elsewhere are refused`;
  }
  return undefined;
}

function resolveEventRef(
  ref: EventRef,
  events: Map<string, ResolvedEvent>,
  byDefinition: Map<EventDefinition, string>,
  path: PropertyKey[],
): { event: string | undefined; pattern: string | undefined } {
  if (ref === AnyEvent) return { event: undefined, pattern: undefined };
  if (typeof ref === 'string') {
    if (events.has(ref)) return { event: ref, pattern: undefined };
    if (ref.includes('*') || ref.includes('?')) {
      const problem = topicPatternProblem(ref);
      if (problem) throw configError(path, `listens to ${problem}`);
      return { event: undefined, pattern: ref };
    }
    const hint = closestName(ref, [...events.keys()]);
    throw configError(
      path,
      `listens to "${ref}", which is not declared in events${hint ? ` — did you mean "${hint}"?` : ''}`,
    );
  }
  if (isEventDefinition(ref)) {
    const name = byDefinition.get(ref);
    if (name !== undefined) return { event: name, pattern: undefined };
    throw configError(
      path,
      'listens to an event definition that is not registered in events; add it to defineOutbox({ events })',
    );
  }
  throw configError(
    path,
    `must name an event: a string, an event(...) definition or AnyEvent (got ${describe(ref)})`,
  );
}

/**
 * A receiver's `deliver` as an {@link OutboxDelivery}: a function is its `deliver`. The
 * relay ignores what it resolves to, so its promise is handed on as it is, not re-awaited
 * in an async wrapper (a promise and a suspended frame per delivery on the relay's hot
 * path); a function that returns no promise gets a resolved one, so a plain function
 * works too.
 */
function normaliseDelivery(deliver: unknown, key: string): OutboxDelivery {
  if (typeof deliver === 'function') {
    const send = deliver as (event: unknown, context: unknown) => unknown;
    return {
      name: send.name || key,
      deliver: (event, context) => {
        const sent = send(event, context);
        return typeof (sent as PromiseLike<unknown> | null)?.then === 'function'
          ? (sent as Promise<void>)
          : RESOLVED;
      },
    };
  }
  return deliver as OutboxDelivery;
}

const RESOLVED: Promise<void> = Promise.resolve();

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Find a part of a payload schema whose parsed value cannot survive JSON and be parsed
 * again: a bare `z.date()` parses a Date but refuses the ISO text it is stored as.
 */
function findUnroundtrippable(
  schema: z.ZodType,
  path: PropertyKey[],
  codec: PayloadCodecName,
  // The schemas already checked: a recursive one (a getter naming itself) is checked once.
  seen: Set<z.ZodType> = new Set(),
): { path: PropertyKey[]; message: string } | undefined {
  if (seen.has(schema)) return undefined;
  seen.add(schema);
  const def = (schema as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })
    ._zod.def;
  // superjson brings a Date, a bigint, a Map and a Set back as themselves.
  if (codec === 'superjson' && ['date', 'bigint', 'map', 'set'].includes(def.type)) {
    return def.type === 'map' || def.type === 'set'
      ? findUnroundtrippable(def.valueType as z.ZodType, [...path, 'value'], codec, seen)
      : undefined;
  }
  switch (def.type) {
    case 'date':
      if (!def.coerce) {
        return {
          path,
          message:
            'is z.date(), which cannot decode the ISO text a date is stored as; use z.coerce.date()',
        };
      }
      return undefined;
    case 'bigint':
      if (!def.coerce) {
        return {
          path,
          message:
            'is z.bigint(), which cannot decode the text a bigint is stored as; use z.coerce.bigint()',
        };
      }
      return undefined;
    case 'map':
    case 'set':
    case 'symbol':
    case 'function':
    case 'promise':
      return {
        path,
        message: `is z.${def.type}(), which JSON cannot hold; use an object or array`,
      };
    case 'object':
      for (const [key, child] of Object.entries(def.shape as Record<string, z.ZodType>)) {
        const found = findUnroundtrippable(child, [...path, key], codec, seen);
        if (found) return found;
      }
      return undefined;
    case 'array':
      return findUnroundtrippable(def.element as z.ZodType, [...path, 'element'], codec, seen);
    case 'record':
      return findUnroundtrippable(def.valueType as z.ZodType, [...path, 'value'], codec, seen);
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'nonoptional':
    case 'catch':
      return findUnroundtrippable(def.innerType as z.ZodType, path, codec, seen);
    case 'union':
      for (const option of def.options as z.ZodType[]) {
        const found = findUnroundtrippable(option, path, codec, seen);
        if (found) return found;
      }
      return undefined;
    default:
      return undefined;
  }
}
