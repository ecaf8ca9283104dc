import { describe, it } from 'vitest';
import { newRunId } from './support.js';
import {
  closeWakeupSubject,
  resolveWakeupOptions,
  type WakeupConformanceOptions,
  type WakeupFactory,
  wakeupChecks,
} from './wakeup-checks.js';

/**
 * Declare the wakeup conformance suite (vitest): one test per behaviour of `OutboxWakeup`,
 * each against a fresh wakeup from `factory`, which the suite closes afterwards.
 *
 * @example
 * ```ts
 * import { wakeupConformance } from 'outboxkit/testing/conformance';
 *
 * // A wakeup whose signal rides in the write gives `send`, standing in for that write.
 * wakeupConformance('redis pub/sub', async ({ runId }) => {
 *   const wakeup = redisWakeup({ url: REDIS_URL, channel: `wake_${runId}` });
 *   return { wakeup, context: { connection: { dialect: 'postgres' } } };
 * });
 * ```
 */
export function wakeupConformance(
  name: string,
  factory: WakeupFactory,
  options: WakeupConformanceOptions = {},
): void {
  const resolved = resolveWakeupOptions(options);
  const timeoutMs = 3 * resolved.signalWithinMs + resolved.quietMs + 10_000;
  describe(`wakeup conformance: ${name}`, () => {
    for (const check of wakeupChecks) {
      const skipped = options.skip?.[check.id];
      it(
        check.title,
        async (context) => {
          if (skipped !== undefined) context.skip(skipped);
          const subject = await factory({ runId: newRunId() });
          try {
            await check.run(subject, resolved);
          } finally {
            await closeWakeupSubject(subject);
          }
        },
        timeoutMs,
      );
    }
  });
}
