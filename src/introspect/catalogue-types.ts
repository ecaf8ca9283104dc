import type { DeliveryMode } from '../declare/types.js';

/**
 * The version of the catalogue's JSON format. Bumped only when a field changes meaning or
 * disappears, so a pipeline reading `catalogue.json` can refuse a format it does not know
 * instead of misreading it. Fields are added without a bump (readers ignore what they do
 * not know).
 */
export const CATALOGUE_FORMAT = 1;

/**
 * Every declared event and what listens to it, at one moment.
 *
 * A snapshot rather than a live view: it is built to be written to a file
 * (`catalogue/catalogue.json`) and compared against the one from the last release, which
 * is the whole point of having it. Plain JSON values only, sorted by name throughout, so
 * import order and declaration order are never a difference.
 */
export interface Catalogue {
  /** The catalogue format (`CATALOGUE_FORMAT`) at the time of writing. */
  readonly format: number;
  /** Every declared event, sorted by name. */
  readonly events: readonly CatalogueEvent[];
  /**
   * Receivers declared for `AnyEvent` or for a topic pattern (`'library.*'`), which receive
   * every event above (a pattern: every event whose name it matches), sorted by key. Each
   * says what it was declared for in {@link CatalogueReceiver.pattern}.
   *
   * A section of their own rather than a row under every event: a transport listed under
   * all two hundred events is a catalogue nobody reads, and it says nothing about any one
   * of them. A pattern is matched when an event is fired, not when the catalogue is built,
   * so listing it under the events it matches today would also go stale with the next
   * event declared.
   */
  readonly wildcardReceivers: readonly CatalogueReceiver[];
  /**
   * The event columns (`defineOutbox({ eventColumns })`), sorted by name; absent where none
   * is declared, so a catalogue written before them reads the same. Every event has them.
   */
  readonly eventColumns?: readonly CatalogueEventColumn[];
}

/** One declared event column, as the catalogue lists it. */
export interface CatalogueEventColumn {
  readonly name: string;
  readonly type: string;
  readonly index: boolean;
}

/** One declared event, its payload shape and everything listening to it. */
export interface CatalogueEvent {
  /** The declared name, which is also the topic: `shop.OrderPlaced`. */
  readonly name: string;
  /** The payload's schema version, written on every row; bumped on a breaking change. */
  readonly version: number;
  /** The event's own sentence (`event({ description })`), or null. */
  readonly description: string | null;
  /**
   * The window of its own the event is declared with (`retention: { days }`), in seconds,
   * or null. Seconds, as `fire()` copies it onto the row, so the JSON stays plain numbers
   * and a pipeline diffing catalogues sees an event start or stop deleting early.
   */
  readonly retentionSeconds: number | null;
  /**
   * `'succeeded'` or `'settled'` for an event deleted once consumed, or null. At most one
   * of this and `retentionSeconds` is set; with neither, the event follows
   * `settings.retentionDays`.
   */
  readonly deleteWhen: 'succeeded' | 'settled' | null;
  /**
   * Whether the event declares an upgrade of older payload versions: the difference
   * between an event whose old rows still decode after a breaking change and one whose old
   * rows dead-letter: true when the event declares `event({ upgrade })`.
   */
  readonly migratesOlderRows: boolean;
  /**
   * The payload codec its rows are written with (`event({ codec })`, else
   * `settings.codec`): `'json'`, `'superjson'` — whose message bodies are superjson's
   * `{ json, meta }` document, so a consumer must decode them with superjson — or the
   * name of a codec of the app's (`defineOutbox({ codecs })`). A catalogue written before
   * codecs existed has none, which reads as `'json'`.
   */
  readonly codec: string;
  /**
   * The message body's fields, flattened (`items`, `items[].sku`) and sorted by path, so a
   * diff can name the one field that changed at any depth: a json event's payload fields, a
   * superjson event's `json`, `json.items[].sku` …, `meta` (see {@link schema}).
   */
  readonly fields: readonly CatalogueField[];
  /**
   * The JSON Schema (draft 2020-12) of the event's message body as its codec writes it —
   * what the row stores and every transport sends — of what decodes (the input side of the
   * zod schema). A json event: the payload's JSON, dates as ISO text, bigints as decimal
   * text. A superjson event: superjson's document `{ json, meta? }`, `json` holding the
   * payload as superjson's JSON does (a Map as `[key, value]` pairs, a Set as an array). A
   * codec of the app's: what its `bodySchema` hook returns, else an opaque body (`{}` with a
   * description saying so).
   */
  readonly schema: Readonly<Record<string, unknown>>;
  /** The receivers declared for this event (never the wildcards), sorted by key. */
  readonly receivers: readonly CatalogueReceiver[];
}

/** One field of an event payload, as the catalogue describes it. */
export interface CatalogueField {
  /**
   * The field's path in the payload: `orderId`, `address.city`, `items[].sku` (`[]` for
   * an array's elements, `{}` for a record's values).
   */
  readonly name: string;
  /**
   * The field's type in a compact, language-neutral spelling read off the JSON Schema:
   * `string`, `string (email)`, `integer`, `array<object>`, `"a" | "b"`, `string | null`.
   * Two catalogues with different spellings for one field are a type change.
   */
  readonly type: string;
  /**
   * False when the field may be left out: optional, or with a default. Which is also the
   * condition under which adding it is a non-breaking change to a log with rows already
   * in it.
   */
  readonly required: boolean;
  /** The field's own description (`.describe(...)`), or null. */
  readonly description: string | null;
}

/** One receiver, as the catalogue describes it. */
export interface CatalogueReceiver {
  /** The key on its delivery rows, which is what a dead letter names. */
  readonly key: string;
  /** The event it is declared for, or null for a wildcard. */
  readonly event: string | null;
  /**
   * For a wildcard, the topic pattern it was declared for (`'library.*'`), or null for one
   * declared for `AnyEvent` (and for a receiver of one event). Published because it is
   * the whole of what a pattern receiver listens to: `event` is null for both kinds.
   */
  readonly pattern: string | null;
  /** When it runs relative to the firing transaction. */
  readonly mode: DeliveryMode;
  /** `handler` runs a function in a transaction; `delivery` sends through a transport. */
  readonly kind: 'handler' | 'delivery';
  /** The transport's name for a `delivery` receiver, or null for a handler. */
  readonly transport: string | null;
  /**
   * Where its code runs: `'relay'` in the relay worker (an eager attempt runs in the firing
   * process, see {@link CatalogueReceiver.eager}); `'task'` in the worker of the outbox's
   * task backend (pg-boss, BullMQ), handed each claimed row by the relay. Inline and
   * onCommit receivers are `'relay'` (they have no row to hand off).
   */
  readonly site: 'relay' | 'task';
  /**
   * Which relay processes claim its rows: those started with `--lane` naming it, or, for
   * `'default'`, those started with none. A change is operational rather than breaking: the
   * rows it still owes move with it, and need a relay serving the new lane.
   */
  readonly lane: string;
  /**
   * Whether a durable delivery is also attempted right after commit, in the firing process,
   * with the relay as the fallback. Published because it changes where and how soon the
   * receiver runs (and that a process death mid-receiver can run it twice).
   */
  readonly eager: boolean;
  /** Attempts before a durable delivery is dead-lettered (copied onto rows at fire time). */
  readonly maxAttempts: number;
  /** Its own lease, in seconds, or null where it uses `settings.leaseSeconds`. */
  readonly leaseSeconds: number | null;
  /** Its own attempt timeout, in seconds, or null where it uses the setting. */
  readonly timeoutSeconds: number | null;
  /**
   * Its own retry curve (`backoff: { baseSeconds, capSeconds }`); each part null where it
   * uses `settings.backoff`. Read when an attempt fails rather than copied onto rows, so a
   * change reaches deliveries already in flight.
   */
  readonly backoff: {
    readonly baseSeconds: number | null;
    readonly capSeconds: number | null;
  };
  /**
   * Where a fan-out receiver's `targets` function lives, or null for a receiver that writes
   * one delivery per event. Published because it changes what a delivery is for this
   * receiver — one per target rather than one per event — and a reader diffing catalogues
   * should see that change.
   *
   * `file:line` relative to the project when `npx outbox codegen` wrote it (it reads the
   * source). The runtime's catalogue cannot read the source, so it publishes the
   * function's name instead (`function endpointsFor`, or `anonymous function`): never
   * null for a fan-out, so the runtime catalogue does not describe one as a plain
   * receiver. {@link CatalogueReceiver.dueCallable} is published the same way.
   */
  readonly targets: string | null;
  /**
   * For a receiver declared with `due` and a `Duration`, that delay in seconds,
   * counted from the event's `occurredAt`; null otherwise. Published because it changes
   * when the work happens.
   */
  readonly dueSeconds: number | null;
  /**
   * For a receiver declared with `due` and a function, where the function lives, as
   * {@link CatalogueReceiver.targets} is published; null otherwise. Two fields rather than
   * one that is sometimes a number and sometimes a path, so a JSON reader never switches
   * on a value's type. At most one of the two is set; a receiver with neither runs as soon
   * as its event is recorded.
   */
  readonly dueCallable: string | null;
  /**
   * How long a delivery may stay owed while it defers without counting
   * (`RetryAfter(seconds, { counts: false })`), in seconds, or null where the receiver
   * declares no bound (such a deferral is then counted after all). Seconds rather than the
   * declared `Duration`, so the JSON stays plain numbers, as the curve does.
   */
  readonly giveUpAfterSeconds: number | null;
  /**
   * Where its handler or transport is declared, `file:line` relative to the project. Only
   * `npx outbox codegen` can know this (it reads the source); the runtime's catalogue
   * leaves it null.
   */
  readonly location: string | null;
}
