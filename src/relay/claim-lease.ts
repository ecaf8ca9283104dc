import type { OutboxConfig, ResolvedReceiver } from '../declare/define-outbox.js';

/** The headroom a claim's lease carries over the lease it is based on: 10 percent. */
const HEADROOM = 1.1;

/** A receiver's own lease, in seconds: its `leaseSeconds`, else `settings.leaseSeconds`. */
export function receiverLeaseSeconds(config: OutboxConfig, receiver: ResolvedReceiver): number {
  return receiver.leaseSeconds ?? config.settings.leaseSeconds;
}

/**
 * The lease a claim stamps on its rows, in seconds (the domain-events reference's
 * `run_relay` batch_size and `receiver` lease_seconds): where every durable receiver the
 * claim can take — those of `lanes`, or every one when `lanes` is undefined — shares one
 * lease no longer than `settings.leaseSeconds`, that lease plus 10 percent of headroom;
 * otherwise `settings.leaseSeconds` plus 10 percent. So a lane of receivers declaring
 * `leaseSeconds: 60` claims under 66 s, whatever the other lanes declare.
 *
 * A batch is claimed before anyone knows which receivers its rows are for, so the claim
 * cannot cover the slowest receiver without delaying the recovery of every other one (the
 * fault of stamping the longest lease on every claim); instead a row whose receiver
 * declares a longer lease is extended to it just before it starts (see the lease keeper),
 * and a row that starts while the claim still covers its receiver's lease costs no write.
 */
export function claimLeaseSeconds(config: OutboxConfig, lanes?: readonly string[]): number {
  const base = config.settings.leaseSeconds;
  const leases = new Set(
    config.receivers
      .filter((r) => r.mode === 'durable' && (lanes === undefined || lanes.includes(r.lane)))
      .map((r) => receiverLeaseSeconds(config, r)),
  );
  const [only] = leases;
  const shared = leases.size === 1 && only <= base ? only : base;
  return Math.round(shared * HEADROOM * 1000) / 1000;
}
