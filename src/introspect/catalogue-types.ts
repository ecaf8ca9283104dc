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
  /** {@link CATALOGUE_FORMAT} at the time of writing. */
  readonly format: number;
  /** Every declared event, sorted by name. */
  readonly events: readonly CatalogueEvent[];
  /**
   * Receivers declared for `AnyEvent`, which receive every event above, sorted by key.
   *
   * A section of their own rather than a row under every event: a transport listed under
   * all two hundred events is a catalogue nobody reads, and it says nothing about any one
   * of them.
   */
  readonly wildcardReceivers: readonly CatalogueReceiver[];
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
   * rows dead-letter. Always false until `event({ upgrade })` exists; published now so the
   * format does not change when it does.
   */
  readonly migratesOlderRows: boolean;
  /**
   * The payload's fields, flattened (`items`, `items[].sku`) and sorted by path, so a diff
   * can name the one field that changed at any depth.
   */
  readonly fields: readonly CatalogueField[];
  /**
   * The payload's JSON Schema (draft 2020-12), of what decodes: the input side of the zod
   * schema, dates as ISO text, bigints as decimal text, as they are stored.
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
  /** When it runs relative to the firing transaction. */
  readonly mode: DeliveryMode;
  /** `handler` runs a function in a transaction; `delivery` sends through a transport. */
  readonly kind: 'handler' | 'delivery';
  /** The transport's name for a `delivery` receiver, or null for a handler. */
  readonly transport: string | null;
  /**
   * Where its code runs: `'relay'` in the relay worker. The only site today; published so
   * a task-backend site can be added without changing the format.
   */
  readonly site: 'relay' | 'task';
  /**
   * Which relay processes claim its rows: those started with `--lane` naming it, or, for
   * `'default'`, those started with none. Always `'default'` until lanes exist.
   */
  readonly lane: string;
  /** Attempts before a durable delivery is dead-lettered (copied onto rows at fire time). */
  readonly maxAttempts: number;
  /** Its own lease, in seconds, or null where it uses `settings.leaseSeconds`. */
  readonly leaseSeconds: number | null;
  /** Its own attempt timeout, in seconds, or null where it uses the setting. */
  readonly timeoutSeconds: number | null;
  /** Its own retry curve; each part null where it uses `settings.backoff`. */
  readonly backoff: {
    readonly baseSeconds: number | null;
    readonly capSeconds: number | null;
  };
  /**
   * Where a fan-out receiver's targets callable lives (`file:line`), or null for a
   * receiver that writes one delivery per event. Always null until targets exist.
   */
  readonly targets: string | null;
  /**
   * For a receiver scheduled with a delay, that delay in seconds from the event's
   * occurred_at; null otherwise. Always null until `due` exists.
   */
  readonly dueSeconds: number | null;
  /**
   * For a receiver scheduled by a callable, where it lives (`file:line`); null otherwise.
   * Two fields rather than one, so a JSON reader never switches on a value's type.
   */
  readonly dueCallable: string | null;
  /**
   * How long a delivery may stay owed while it defers without counting, in seconds, or
   * null for no bound. Always null until `giveUpAfter` exists.
   */
  readonly giveUpAfterSeconds: number | null;
  /**
   * Where its handler or transport is declared, `file:line` relative to the project. Only
   * `npx outbox codegen` can know this (it reads the source); the runtime's catalogue
   * leaves it null.
   */
  readonly location: string | null;
}
