/**
 * `outbox.quietReceivers()`: the declared receivers that have succeeded at nothing inside a
 * window — the reference's `quiet_receivers` / `QuietReceiver`. "This receiver has not run
 * since June" is a fact here, not a guess, because every durable delivery left a row.
 *
 * Driven by the registry (the config) rather than by the table, so a receiver that has
 * never received anything appears, with `lastSucceededAt` null — the answer worth having,
 * and the one a query over delivery rows alone cannot give. Only durable receivers write
 * rows, so only they are reported: an inline or onCommit receiver has no delivery history
 * to be quiet about, and listing it as silent for ever would train the reader to ignore
 * the output.
 *
 * Read off `succeeded_at` with no status filter: `completed_at` and the status describe
 * the current cycle, which a replay or requeue reopens, so an operator who replays
 * yesterday's events would otherwise be told the receiver had never run. The rows are not
 * the whole record: the prune deletes them and keeps each receiver's newest success in the
 * last-success table as it goes; the answer is the later of the two.
 */
import { type Duration, durationSchema, durationSeconds } from '../declare/duration.js';
import { ValidationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import { checkedNow } from './health.js';

/** A declared receiver with nothing delivered to it inside the window. */
export interface QuietReceiver {
  readonly receiverKey: string;
  /** The event it is declared for; undefined for a wildcard (`AnyEvent`, a topic pattern). */
  readonly event: string | undefined;
  /** When it last succeeded, or null for never — the more interesting answer of the two. */
  readonly lastSucceededAt: Date | null;
}

/** Options of {@link Outbox.quietReceivers}. */
export interface QuietReceiversOptions {
  /**
   * How long a receiver may go without a success before it is listed.
   * @defaultValue `{ days: settings.retentionDays }`: the window an ordinary event's
   * deliveries are kept for
   */
  readonly within?: Duration;
  /** The moment the window ends at. @defaultValue the outbox's clock */
  readonly now?: Date;
}

/**
 * The durable receivers of the config with no success after `now - within`, never-run ones
 * first, then the longest quiet, then by key. One statement: an index probe per receiver.
 * @throws {ValidationError} for a `within` that is not a duration longer than zero, or a
 * `now` that is not a valid Date.
 */
export async function quietReceivers(
  rt: Runtime,
  options: QuietReceiversOptions = {},
): Promise<QuietReceiver[]> {
  const now = checkedNow(options.now, 'quietReceivers', rt);
  const windowMs = withinMs(options.within, rt.config.settings.retentionDays);
  const since = now.getTime() - windowMs;
  const durable = rt.config.receivers.filter((r) => r.mode === 'durable');
  const rows = await rt.store.readLastSucceeded(durable.map((r) => r.key));
  const last = new Map<string, number | null>();
  for (const r of rows) {
    const times = [r.live, r.kept].filter((d): d is Date => d !== null).map((d) => d.getTime());
    last.set(r.receiverKey, times.length > 0 ? Math.max(...times) : null);
  }
  const quiet: QuietReceiver[] = [];
  for (const r of durable) {
    const at = last.get(r.key) ?? null;
    if (at !== null && at > since) continue;
    quiet.push({
      receiverKey: r.key,
      event: r.event,
      lastSucceededAt: at === null ? null : new Date(at),
    });
  }
  return quiet.sort(
    (a, b) =>
      (a.lastSucceededAt?.getTime() ?? Number.NEGATIVE_INFINITY) -
        (b.lastSucceededAt?.getTime() ?? Number.NEGATIVE_INFINITY) ||
      (a.receiverKey < b.receiverKey ? -1 : a.receiverKey > b.receiverKey ? 1 : 0),
  );
}

/** The window in milliseconds: `within`, checked, or the retention window in days. */
function withinMs(within: Duration | undefined, retentionDays: number): number {
  if (within === undefined) return retentionDays * 86_400_000;
  const parsed = durationSchema.safeParse(within);
  if (!parsed.success) {
    throw new ValidationError(
      `outbox.quietReceivers({ within }) ${parsed.error.issues[0]?.message ?? 'must be a duration'} (got ${JSON.stringify(within)})`,
      { path: 'within' },
    );
  }
  return durationSeconds(parsed.data) * 1000;
}
