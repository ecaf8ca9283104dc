/**
 * The execution-site seam (the domain-events reference's `TaskBackend`): where a durable
 * receiver declared `site: 'task'` runs. The relay claims the row either way; a backend
 * only decides who executes it, which is why the site is a knob apart from the timing
 * (`mode`): a queue is only ever an answer to the second question.
 *
 * A backend may lose a hand-off without consequence: the delivery row is the record, so a
 * hand-off the queue dropped is reclaimed when its lease lapses — what makes a lossy queue
 * safe here, and what keeps this seam small. It may also deliver one twice, or late (a
 * redelivery, a visibility timeout): the message carries the claim the row was handed off
 * under, and the worker takes the row under exactly that claim before running anything
 * (`outbox.deliverOne(id, { claimedBy, claimedAt })`), so a second copy, or a copy held
 * past its lease, finds the claim gone and does nothing.
 */

/**
 * One claimed delivery handed to a task queue: the row and the claim it was handed off
 * under. Plain JSON (the claim time an ISO 8601 string, not a `Date`), so any queue
 * carries it unchanged.
 */
export interface TaskHandOff {
  /** The delivery row's id (a string of digits). */
  readonly deliveryId: string;
  /** The worker id of the claim the row was handed off under. */
  readonly claimedBy: string;
  /** When that claim was made, as ISO 8601 text (`Date.prototype.toISOString`). */
  readonly claimedAt: string;
}

/**
 * Where a `site: 'task'` receiver's deliveries run: a queue (pg-boss, BullMQ, your own)
 * that carries each {@link TaskHandOff} to a worker, which must call
 * `outbox.deliverOne(handOff.deliveryId, { claimedBy: handOff.claimedBy, claimedAt:
 * handOff.claimedAt })` with the values exactly as given. Give it to
 * `createOutbox(config, { taskBackend })`.
 *
 * The row owns retries, backoff and dead letters: turn the queue's own retries off, or a
 * failed job would be retried by the queue AND by the outbox (the queue's copy finds the
 * claim gone and does nothing, so it only costs a job).
 */
export interface TaskBackend {
  /** A name for logs and messages (`'pg-boss'`, `'bullmq'`). */
  readonly name: string;
  /**
   * Arrange for the delivery to run somewhere, carrying its claim. Resolves once the queue
   * holds it. A rejection is logged and nothing else: the row is reclaimed (and handed
   * off again) when its lease lapses.
   */
  enqueue(handOff: TaskHandOff): Promise<void>;
  /** Release what the backend opened (its connection to the queue). Called by `outbox.close()`. */
  close(): Promise<void>;
}
