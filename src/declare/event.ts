import type { z } from 'zod';
import type { JsonValue } from './types.js';

const EVENT = Symbol.for('outboxkit.event');

/**
 * A payload codec, by name (the codec seam lives in src/codec/payload-codec.ts): `json`,
 * the exact JSON codec (a `Date` stored as ISO text: declare `z.coerce.date()`),
 * `superjson` (a `Date`, `bigint`, `Map`, `Set` come back as themselves; needs the
 * `superjson` package), or the name of a `PayloadCodec` of your own declared in
 * `defineOutbox({ codecs })` (a name no codec of the outbox has is refused there).
 */
export type PayloadCodecName = 'json' | 'superjson' | (string & {});

/** How long `pruneEvents` keeps an event: a window of its own, or once consumed. */
export type Retention = { readonly days: number } | 'succeeded' | 'settled';

/** Options of {@link event}. */
export interface EventOptions<S extends z.ZodType> {
  /**
   * The payload's schema. `fire()` validates every payload with it before writing anything,
   * and receivers get the payload decoded by it. Dates must survive JSON, so declare them as
   * `z.coerce.date()` (a bare `z.date()` is refused: it could never decode its own rows).
   */
  readonly schema: S;
  /**
   * The payload's schema version, written on every row. Bump it on a breaking change so a
   * receiver (and `catalogue diff`) can tell old rows from new ones.
   * @defaultValue 1
   */
  readonly version?: number;
  /**
   * How long `pruneEvents` keeps this event's rows. Copied onto every row at fire time,
   * so a later change here does not reach events already recorded.
   * @defaultValue the outbox-wide retention
   */
  readonly retention?: Retention;
  /** A sentence for the catalogue: what happened, in the domain's words. */
  readonly description?: string;
  /**
   * Bring a payload stored under an older `version` to the current one, before it is
   * decoded with `schema`: handed the stored JSON and the version it was written with,
   * it returns the payload as this version would have written it. Without it, a row of an
   * older version is decoded as it is, and dead-letters once a breaking change stops it
   * decoding. A throw dead-letters the row with `PayloadUpgradeFailed`, naming both
   * versions. The catalogue publishes whether an event has one (`migratesOlderRows`).
   */
  readonly upgrade?: (payload: JsonValue, fromVersion: number) => unknown;
  /**
   * How the payload is stored and read back (see {@link PayloadCodecName}): `'superjson'`
   * keeps a `Date`, `bigint`, `Map` or `Set` as itself, so the schema may say `z.date()`;
   * a codec of your own is named here once declared in `defineOutbox({ codecs })`.
   * Each row records the codec it was written with (the `outbox-codec` header), so rows
   * written before a change of codec still decode with theirs. The catalogue lists it.
   * @defaultValue `settings.codec`, else `'json'`
   */
  readonly codec?: PayloadCodecName;
}

/** A declared event. Build it with {@link event}; its name is its key in `defineOutbox({ events })`. */
export interface EventDefinition<S extends z.ZodType = z.ZodType> {
  readonly [EVENT]: true;
  readonly schema: S;
  readonly version: number;
  readonly retention: Retention | undefined;
  readonly description: string | undefined;
  /** `upgrade` as declared: brings a payload of an older version to this one, before decoding. */
  readonly upgrade: ((payload: JsonValue, fromVersion: number) => unknown) | undefined;
  /** `codec` as declared; `undefined` takes the outbox's `settings.codec`. */
  readonly codec: PayloadCodecName | undefined;
}

/**
 * Declare an event: a payload schema and a version.
 *
 * The event's name is the key it is given in `defineOutbox({ events })` — the record key
 * *is* the pinned name, so renaming a variable never strands rows written under the old
 * name (the reference's `name=` option exists for exactly that, and a record key gives it
 * for free).
 *
 * @example
 * ```ts
 * const OrderPlaced = event({ schema: z.object({ orderId: z.string() }), version: 1 });
 * ```
 */
export function event<S extends z.ZodType>(options: EventOptions<S>): EventDefinition<S> {
  return {
    [EVENT]: true,
    schema: options.schema,
    version: options.version ?? 1,
    retention: options.retention,
    description: options.description,
    upgrade: options.upgrade,
    codec: options.codec,
    // kept for validation: unknown keys are reported by defineOutbox
    ...({ rawOptions: options } as object),
  } as EventDefinition<S>;
}

/** Whether a value was built by {@link event}. */
export function isEventDefinition(value: unknown): value is EventDefinition {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[EVENT] === true
  );
}

/** The options object an event was declared with, for validation. */
export function rawEventOptions(definition: EventDefinition): unknown {
  return (definition as unknown as { rawOptions: unknown }).rawOptions;
}

/** One declared event, resolved by `defineOutbox`: what the runtime routes and decodes by. */
export interface ResolvedEvent {
  readonly name: string;
  readonly version: number;
  readonly schema: z.ZodType;
  readonly retention: Retention | undefined;
  readonly description: string | undefined;
  /** Brings an older row's payload to this version before it is decoded. */
  readonly upgrade: ((payload: JsonValue, fromVersion: number) => unknown) | undefined;
  /** The codec its payloads are written with: its own, else `settings.codec`, else `json`. */
  readonly codec: PayloadCodecName;
}
