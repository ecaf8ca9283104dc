import type { OutboxConfig } from '../declare/define-outbox.js';

/**
 * The lease a claim stamps on its rows, in seconds: the outbox's lease, or the longest one
 * a receiver declares. A batch is claimed before anyone knows which receivers its rows are
 * for, so the claim covers the slowest; a live relay renews it three times per lease, and
 * only a dead relay's rows wait it out.
 */
export function claimLeaseSeconds(config: OutboxConfig): number {
  return Math.max(
    config.settings.leaseSeconds,
    ...config.receivers.map((r) => r.leaseSeconds ?? 0),
  );
}
