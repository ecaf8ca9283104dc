/**
 * The acknowledgements of handlers that wrote nothing, grouped the way PostgreSQL groups
 * commits: the first goes at once, alone; those that end while it is in flight wait for it
 * and then go together, in one statement, one commit. A handler that wrote nothing has no
 * work to commit with its acknowledgement, so nothing binds its acknowledgement to a
 * transaction of its own; what must hold still holds: each row is acknowledged under the
 * compare-and-set on its claim, its verdict (acknowledged or lost) is its own, and its
 * handler's attempt ends only once its row is recorded done.
 *
 * Why: with ten such handlers at once (the relay's default concurrency), one statement and
 * one commit per row was the handler path's floor (`raw_handler_throughput`'s shape, in
 * one round trip instead of three); grouped, a relay writes ~one commit per statement's
 * duration instead of one per row (bench/README.md, "Measured here (issue 28, items
 * 2–4)"). The wait it adds to a row is at most the one statement in flight before it, which
 * that row would otherwise have queued behind for the commit flush anyway.
 *
 * Groups are per claim (worker and claim time): the compare-and-set of one statement is
 * one claim's. The time recorded for a group's rows is the latest of theirs, as a
 * transport batch's record takes its last success's.
 */
import type { ClaimToken } from '../store.js';

/** Acknowledge `ids` under `token` at `at`; resolves with the ids it changed. */
export type SendAcknowledgements = (
  ids: readonly string[],
  token: ClaimToken,
  at: Date,
) => Promise<ReadonlySet<string>>;

interface Waiting {
  readonly id: string;
  readonly at: Date;
  readonly resolve: (acknowledged: boolean) => void;
  readonly reject: (error: unknown) => void;
}

interface Group {
  waiting: Waiting[];
}

/** The groups of one store: see the module header. */
export class AcknowledgementGroups {
  /** The claims with a statement in flight, and the rows waiting behind it. */
  readonly #sending = new Map<string, Group>();

  constructor(private readonly send: SendAcknowledgements) {}

  /**
   * Acknowledge row `id` of the claim `token` at `at`: at once when no acknowledgement of
   * that claim is in flight, else with the others that wait for it. Resolves true when the
   * row was acknowledged, false when the claim was lost; rejects with the statement's error.
   */
  acknowledge(id: string, token: ClaimToken, at: Date): Promise<boolean> {
    const key = `${token.workerId}\u0000${token.claimedAt.getTime()}`;
    return new Promise<boolean>((resolve, reject) => {
      const waiting: Waiting = { id, at, resolve, reject };
      const group = this.#sending.get(key);
      if (group) {
        group.waiting.push(waiting);
        return;
      }
      const started: Group = { waiting: [] };
      this.#sending.set(key, started);
      void this.#run(key, started, token, [waiting]);
    });
  }

  /** Send `batch`, then whatever gathered meanwhile, until nothing waits. */
  async #run(key: string, group: Group, token: ClaimToken, first: Waiting[]): Promise<void> {
    let batch = first;
    while (batch.length > 0) {
      let at = batch[0].at;
      for (const w of batch) if (w.at.getTime() > at.getTime()) at = w.at;
      try {
        const done = await this.send(
          batch.map((w) => w.id),
          token,
          at,
        );
        for (const w of batch) w.resolve(done.has(w.id));
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
      batch = group.waiting;
      group.waiting = [];
    }
    this.#sending.delete(key);
  }
}
