import { encodeJsonValue } from '../codec/json.js';
import type { JsonValue } from '../declare/types.js';
import { ValidationError } from '../errors/outbox-error.js';
import { actorKeyOf } from './actor-key.js';
import { frames, type ScopeFrame } from './frame.js';
import { emptyScope, SCOPE_HEADER_PREFIX, type Scope } from './scope.js';

/** The longest correlation id its column holds. */
const MAX_CORRELATION_ID = 255;

/** The facts of an {@link attributed} block. Every other property is data (JSON values). */
export interface Attribution {
  /**
   * Who is acting: a user model instance, a service, a string. Its key is derived once,
   * here (see `actorKey`). Naming `actor` or `actorKey` replaces the outer block's actor
   * whole; `null` clears it for this block.
   */
  readonly actor?: unknown;
  /**
   * The actor's key as the row records it. Without it, derived from `actor`: a string as
   * is, a Sequelize model instance as `ModelName:pk`, an object with an `id` as
   * `String(id)`; any other actor needs this.
   */
  readonly actorKey?: string;
  /**
   * The chain's correlation id (a request id, a job id), 1 to 255 characters. Without one
   * anywhere in scope, each event fired starts a chain of its own, named by its UUID.
   */
  readonly correlationId?: string | null;
  /** Anything else: data written into each event's headers as `outbox-scope-<name>`. */
  readonly [data: string]: unknown;
}

const FACTS = new Set(['actor', 'actorKey', 'correlationId']);

/**
 * Attach ambient facts to every event fired inside `fn`: the actor, the correlation id and
 * any extra data, recorded by `fire()` onto each event's row.
 *
 * Nested blocks layer: an inner one overrides what it sets and inherits the rest, so a
 * request-level actor survives a block that only adds a `source`. The actor is one fact:
 * naming any part of it (`actor` or `actorKey`) replaces all of it, because a key from one
 * block beside an object from another describes two actors.
 *
 * Carried on `AsyncLocalStorage`, so it follows `await`, promises, timers and tasks `fn`
 * starts. The scope is frozen; `fn` is handed it, and `currentScope()` reads it.
 *
 * @returns what `fn` returns (its promise, for an async `fn`).
 * @throws {ValidationError} for an actor no key can be derived from, a bad correlation
 *   id, or data that is not JSON, before `fn` runs.
 *
 * @example
 * ```ts
 * await attributed({ actor: req.user, correlationId: req.id }, () => placeOrder(req.body));
 * ```
 */
export function attributed<T>(attribution: Attribution, fn: (scope: Scope) => T): T {
  if (typeof attribution !== 'object' || attribution === null || Array.isArray(attribution)) {
    throw new ValidationError('attributed(): the first argument must be an object of facts');
  }
  if (typeof fn !== 'function') {
    throw new ValidationError('attributed(): the second argument must be the function to run');
  }
  const frame = layer(frames.getStore(), attribution);
  return frames.run(frame, fn, frame.scope);
}

function layer(outer: ScopeFrame | undefined, attribution: Attribution): ScopeFrame {
  const base = outer?.scope ?? emptyScope();
  let actor = base.actor;
  let actorKey = base.actorKey;
  if (attribution.actor !== undefined || attribution.actorKey !== undefined) {
    actor = attribution.actor === null ? undefined : attribution.actor;
    if (attribution.actorKey !== undefined) {
      if (typeof attribution.actorKey !== 'string' || attribution.actorKey.length === 0) {
        throw new ValidationError(
          `attributed(): actorKey must be a non-empty string (got ${JSON.stringify(attribution.actorKey)})`,
          { path: 'actorKey' },
        );
      }
      actorKey = attribution.actorKey;
    } else {
      actorKey = actor === undefined ? null : actorKeyOf(actor);
    }
  }
  let correlationId = base.correlationId;
  const given = attribution.correlationId;
  if (given !== undefined && given !== null) {
    if (typeof given !== 'string' || given.length === 0 || given.length > MAX_CORRELATION_ID) {
      throw new ValidationError(
        `attributed(): correlationId must be a string of 1 to ${MAX_CORRELATION_ID} characters (got ${JSON.stringify(given)})`,
        { path: 'correlationId' },
      );
    }
    correlationId = given;
  }
  const added = dataOf(attribution);
  const data = added ? Object.freeze({ ...base.data, ...added }) : base.data;
  const scope: Scope = Object.freeze({
    actor,
    actorKey,
    correlationId,
    causedBy: base.causedBy,
    data,
    tenant: base.tenant,
  });
  return {
    scope,
    headers: added ? headersOf(data) : (outer?.headers ?? null),
    suppressions: outer?.suppressions ?? [],
  };
}

/** The block's data: a detached, deeply frozen JSON copy, or undefined when it has none. */
function dataOf(attribution: Attribution): Record<string, JsonValue> | undefined {
  let data: Record<string, JsonValue> | undefined;
  for (const name of Object.keys(attribution)) {
    if (FACTS.has(name)) continue;
    const value = attribution[name];
    if (value === undefined) continue;
    if (name === 'causedBy') {
      throw new ValidationError(
        'attributed(): causedBy is not data; mark descent with causedBy(parent, fn)',
        { path: 'causedBy' },
      );
    }
    if (name.trim() === '') {
      throw new ValidationError('attributed(): a data entry has an empty name', { path: name });
    }
    const text = encodeJsonValue(value, `attributed().${name}`).text;
    data ??= {};
    data[name] = deepFreeze(JSON.parse(text) as JsonValue);
  }
  return data;
}

function headersOf(data: Readonly<Record<string, JsonValue>>): Record<string, JsonValue> | null {
  const names = Object.keys(data);
  if (names.length === 0) return null;
  const headers: Record<string, JsonValue> = {};
  for (const name of names) headers[`${SCOPE_HEADER_PREFIX}${name}`] = data[name];
  return Object.freeze(headers);
}

function deepFreeze<V extends JsonValue>(value: V): V {
  if (typeof value === 'object' && value !== null) {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}
