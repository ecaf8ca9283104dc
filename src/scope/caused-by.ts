import type { OutboxEvent } from '../declare/types.js';
import { ValidationError } from '../errors/outbox-error.js';
import { frames, type ScopeFrame } from './frame.js';
import { emptyScope } from './scope.js';

/**
 * The parent of a {@link causedBy} block: an {@link OutboxEvent} as a receiver is handed
 * it, or its identity read off its row (`sequence` and `correlationId`; `id` names the
 * chain when the row has no correlation id).
 */
export interface Cause {
  readonly sequence: string;
  readonly correlationId: string | null;
  readonly id?: string;
  /**
   * The parent's tenant: events fired inside the block belong to it (`null`: to none).
   * Absent: the tenant of the scope around the block stays.
   */
  readonly tenant?: string | null;
}

/**
 * Mark events fired inside `fn` as descended from `parent`: each records the parent's
 * sequence as `caused_by`, and the parent's chain id as its correlation id.
 *
 * outboxkit sets it around every receiver it runs (`inline`, `onCommit`, the relay's
 * handlers, `eager` attempts), so an event a receiver fires records its parent with no
 * ceremony at the call site. Call it yourself where you run a receiver's work elsewhere
 * (a job queue of your own).
 *
 * Both values come off the parent's row, never from the ambient scope: by the time a
 * durable delivery runs, the block that attributed the parent has long exited, possibly
 * in another process. Causation is one hop; the correlation id is the whole tree, which
 * is what keeps a grandchild fired hours later in the request's chain. The parent's tenant
 * (when it names one, `null` included) is the block's tenant, as attribution is: a
 * receiver of tenant A's event fires A's events. The rest of the scope (actor, data,
 * suppression) is inherited from where `fn` runs.
 *
 * @returns what `fn` returns.
 * @throws {ValidationError} for a parent without a sequence.
 */
export function causedBy<T>(parent: Cause, fn: () => T): T {
  if (
    typeof parent !== 'object' ||
    parent === null ||
    typeof parent.sequence !== 'string' ||
    !/^[1-9][0-9]*$/.test(parent.sequence)
  ) {
    throw new ValidationError(
      `causedBy(): parent must be an event or { sequence, correlationId } with sequence a positive decimal string (got ${JSON.stringify((parent as Cause | null)?.sequence)})`,
      { path: 'sequence' },
    );
  }
  if (
    parent.correlationId !== null &&
    parent.correlationId !== undefined &&
    typeof parent.correlationId !== 'string'
  ) {
    throw new ValidationError(
      `causedBy(): parent.correlationId must be a string or null (got ${JSON.stringify(parent.correlationId)})`,
      { path: 'correlationId' },
    );
  }
  if (typeof fn !== 'function') {
    throw new ValidationError('causedBy(): the second argument must be the function to run');
  }
  return withCause(parent, fn);
}

/**
 * {@link causedBy} without the argument checks, for outboxkit's own execution sites: run
 * `fn` (a receiver) so that what it fires descends from `event`. One frame per receiver
 * call; nothing is read from the row beyond the event the site already holds.
 */
export function withCause<T>(event: Cause | OutboxEvent, fn: () => T): T {
  return frames.run(causeFrame(frames.getStore(), event), fn);
}

function causeFrame(outer: ScopeFrame | undefined, parent: Cause): ScopeFrame {
  const base = outer?.scope ?? emptyScope();
  return {
    scope: Object.freeze({
      ...base,
      causedBy: parent.sequence,
      correlationId: parent.correlationId ?? parent.id ?? null,
      // A receiver of a tenant's event fires for that tenant, wherever the relay runs.
      tenant: parent.tenant === undefined ? base.tenant : parent.tenant,
    }),
    headers: outer?.headers ?? null,
    suppressions: outer?.suppressions ?? [],
  };
}
