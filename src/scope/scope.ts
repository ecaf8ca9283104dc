import type { JsonValue } from '../declare/types.js';

/**
 * The ambient facts `fire()` captures onto every event fired inside an `attributed()` (or
 * `causedBy()`) block: who, which chain, caused by what, and any extra data.
 *
 * Frozen, and a nested block builds a new one rather than editing this one: a scope that
 * could be edited from inside would let a receiver rewrite the attribution of every event
 * fired after it. `data` is frozen too (a detached copy of what the block was given).
 * `actor` is the caller's own object, held by reference and never frozen (it may be a
 * Sequelize model instance); what reaches the row is `actorKey`, derived once.
 */
export interface Scope {
  /**
   * The actor as the block named it (a user model instance, a service object, a string),
   * for code in this process that wants it whole; `undefined` when none is set.
   */
  readonly actor: unknown;
  /**
   * The actor's identity, written to the event row's `actor` column: the block's explicit
   * `actorKey`, else derived once from `actor` (see `attributed`); `null` when none is set.
   */
  readonly actorKey: string | null;
  /** The chain's correlation id, or `null` (an event fired then starts a chain of its own). */
  readonly correlationId: string | null;
  /** The sequence of the event whose receiver is running, or `null` outside any receiver. */
  readonly causedBy: string | null;
  /**
   * The block's extra data (`attributed({ source: 'import' }, fn)`), JSON values. Each entry
   * is written into the headers of every event fired in the block, as
   * `outbox-scope-<name>` (see {@link SCOPE_HEADER_PREFIX}).
   */
  readonly data: Readonly<Record<string, JsonValue>>;
  /**
   * The tenant of a `withTenant()` block (or of the event whose receiver is running), or
   * `null`: what `fire()` records as an event's tenant when the call names none, on an
   * outbox with `settings.tenancy: 'column'`.
   */
  readonly tenant: string | null;
}

/**
 * The prefix under which a scope's `data` lands in the headers of each event fired inside
 * it: `attributed({ source: 'import' }, …)` gives every event the header
 * `outbox-scope-source: "import"`. Headers because they travel with the event to every
 * receiver, in any process, and on to brokers, with no column of their own; prefixed so
 * they never collide with a header the caller names. A header passed to `fire()` under the
 * same name wins: the call site knows more than the block around it.
 */
export const SCOPE_HEADER_PREFIX = 'outbox-scope-';

/**
 * A fresh, frozen, empty scope: what `currentScope()` answers outside any block. Fresh
 * rather than a shared singleton, so nothing handed to one caller is ever another's.
 */
export function emptyScope(): Scope {
  return Object.freeze({
    actor: undefined,
    actorKey: null,
    correlationId: null,
    causedBy: null,
    data: Object.freeze({}),
    tenant: null,
  });
}
