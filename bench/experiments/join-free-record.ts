/**
 * EXPERIMENT, not outboxkit's behaviour: record the succeeded outcomes of a batch with a
 * join-free UPDATE (`id = ANY($ids)`), and only the rest through the store's own
 * `UPDATE … FROM unnest(…)` statement. Enabled in relay processes by
 * `npm run bench -- --experiment join-free-record`, to measure the fix proposed for
 * `PostgresStore.recordOutcomes` (see bench/README.md) before it lands in src/.
 *
 * It reaches the store through the internal runtime, so it may break when src/ changes;
 * delete it once src/ records outcomes this way.
 */
import type { Outbox } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { ClaimToken, Outcome } from '../../src/storage/store.js';

interface RecordingStore {
  recordOutcomes(outcomes: readonly Outcome[], token: ClaimToken): Promise<number>;
}

export function useJoinFreeRecord(outbox: Outbox, schema: string): void {
  const rt = runtimeOf(outbox);
  const store = rt.store as unknown as RecordingStore;
  const original = store.recordOutcomes.bind(store);
  const deliveries = `"${schema}"."outbox_deliveries"`;
  store.recordOutcomes = async (outcomes, token) => {
    const succeeded = outcomes.filter((o) => o.status === 'succeeded');
    const rest = outcomes.filter((o) => o.status !== 'succeeded');
    let changed = 0;
    if (succeeded.length > 0) {
      const [, meta] = (await rt.sequelize.query(
        `UPDATE ${deliveries}
         SET status = 'succeeded', attempts = attempts + 1, completed_at = $3, succeeded_at = $3,
             lease_until = NULL
         WHERE id = ANY($4::bigint[]) AND status = 'claimed' AND claimed_by = $1 AND claimed_at = $2`,
        {
          bind: [
            token.workerId,
            token.claimedAt,
            succeeded[succeeded.length - 1].completedAt,
            succeeded.map((o) => o.id),
          ],
          raw: true,
        },
      )) as [unknown, { rowCount?: number }];
      changed += meta?.rowCount ?? 0;
    }
    if (rest.length > 0) changed += await original(rest, token);
    return changed;
  };
}
