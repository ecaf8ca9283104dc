import { ValidationError } from '../errors/outbox-error.js';

/** The shape of a Sequelize model instance this module reads, without importing Sequelize. */
interface ModelInstanceLike {
  get(attribute: string): unknown;
  constructor: { readonly name: string; readonly primaryKeyAttributes: readonly string[] };
}

function isModelInstance(value: object): value is ModelInstanceLike {
  const ctor = (value as { constructor?: { primaryKeyAttributes?: unknown } }).constructor;
  return (
    typeof (value as { get?: unknown }).get === 'function' &&
    ctor !== undefined &&
    Array.isArray(ctor.primaryKeyAttributes) &&
    ctor.primaryKeyAttributes.length > 0
  );
}

/**
 * The key an actor is identified by on the event row, derived once, where the
 * `attributed()` block is entered:
 *
 * - a string: itself (`'system:import'`);
 * - a Sequelize model instance: `ModelName:pk` (`User:42`; a composite key's values joined
 *   by `,`), so keys of different models never collide;
 * - any other object with an `id`: `String(id)`.
 *
 * Anything else is refused rather than recorded as no actor: events that silently arrive
 * without one are the failure attribution exists to prevent. Pass `actorKey` for those.
 *
 * @throws {ValidationError} naming what was given and the fix.
 */
export function actorKeyOf(actor: unknown): string {
  if (typeof actor === 'string') {
    if (actor.length > 0) return actor;
    throw new ValidationError('attributed(): actor is an empty string; name the actor', {
      path: 'actor',
    });
  }
  if (typeof actor === 'object' && actor !== null) {
    if (isModelInstance(actor)) {
      const model = actor.constructor;
      const values = model.primaryKeyAttributes.map((a) => actor.get(a));
      if (values.some((v) => v === null || v === undefined)) {
        throw new ValidationError(
          `attributed(): actor is a ${model.name} without a primary key (is it saved?); save it first or pass actorKey`,
          { path: 'actor' },
        );
      }
      return `${model.name}:${values.map(String).join(',')}`;
    }
    const id = (actor as { id?: unknown }).id;
    if (id !== undefined && id !== null && String(id) !== '') return String(id);
  }
  const what =
    typeof actor === 'object' && actor !== null
      ? `an object without an id (${actor.constructor?.name ?? 'Object'})`
      : `a ${typeof actor}`;
  throw new ValidationError(
    `attributed(): cannot derive an actor key from actor, ${what}; pass actorKey as well, e.g. attributed({ actor, actorKey: 'service:billing' }, fn)`,
    { path: 'actor' },
  );
}
