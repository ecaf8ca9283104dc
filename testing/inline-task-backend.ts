/**
 * A task backend for tests: it runs each handed-off delivery at once, inside the hand-off,
 * through the outbox's own take under a claim (`deliverOne(id, claim)`), so a test of a
 * `site: 'task'` receiver runs the production path — the relay's claim, the hand-off, the
 * take, the attempt and its record — with no queue. What it skips is the queue: its
 * serialisation is the hand-off's three JSON values, which this copies through JSON too.
 */
import type { DeliveryStatus, Outbox, TaskBackend, TaskHandOff } from '../src/index.js';

/** A {@link TaskBackend} that runs each task inside its hand-off; see {@link inlineTaskBackend}. */
export interface InlineTaskBackend extends TaskBackend {
  /** Every hand-off it ran, in order, with what `deliverOne` answered (`null`: nothing recorded). */
  readonly ran: readonly {
    readonly handOff: TaskHandOff;
    readonly status: DeliveryStatus | null;
  }[];
}

/**
 * A task backend that runs each task at once through `outbox.deliverOne(id, claim)`: pass
 * it to `createOutbox(config, { taskBackend: inlineTaskBackend })` (the function form, since
 * the backend needs the outbox it is given to). `drainOutbox` then runs `site: 'task'`
 * receivers as the relay and a queue worker would, and returns once they ran; their
 * outcomes are not counted in its result (nothing happened to those rows in the drain
 * itself), so read the rows, or `ran`.
 *
 * @example
 * ```ts
 * const outbox = createOutbox(config, { ...db.outboxOptions, taskBackend: inlineTaskBackend });
 * await outbox.fire('shop.OrderPlaced', { orderId: 1 });
 * await drainOutbox(outbox); // the task receiver has run, under its claim
 * ```
 */
export function inlineTaskBackend(outbox: Outbox): InlineTaskBackend {
  const ran: { handOff: TaskHandOff; status: DeliveryStatus | null }[] = [];
  return {
    name: 'inline',
    ran,
    async enqueue(handOff) {
      // Through JSON, as a queue carries it: a value that would not survive fails here.
      const carried = JSON.parse(JSON.stringify(handOff)) as TaskHandOff;
      const status = await outbox.deliverOne(carried.deliveryId, {
        claimedBy: carried.claimedBy,
        claimedAt: carried.claimedAt,
      });
      ran.push({ handOff: carried, status });
    },
    async close() {},
  };
}
