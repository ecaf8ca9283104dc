import { describe, it } from 'vitest';
import { newRunId } from './support.js';
import {
  CONFORMANCE_EVENT_NAMES,
  closeSubject,
  resolveTransportOptions,
  type TransportConformanceOptions,
  type TransportFactory,
  transportChecks,
} from './transport-checks.js';

/**
 * Declare the transport conformance suite (vitest): one test per behaviour of
 * `OutboxDelivery`, each against a fresh transport from `factory`, which the suite closes
 * afterwards. A check needing a hook the factory does not give (or a method the transport
 * does not have) is reported as skipped with the reason.
 *
 * @example
 * ```ts
 * import { transportConformance } from 'outboxkit/testing/conformance';
 *
 * transportConformance('redis streams', async ({ runId }) => {
 *   const redis = await connectRedis();
 *   const transport = redisStreams({ client: redis, stream: () => `s_${runId}` });
 *   return {
 *     transport,
 *     received: async () => readStream(redis, `s_${runId}`),
 *     cleanup: () => redis.quit(),
 *   };
 * });
 * ```
 */
export function transportConformance(
  name: string,
  factory: TransportFactory,
  options: TransportConformanceOptions = {},
): void {
  const resolved = resolveTransportOptions(options);
  // Room for the slowest check: a failing destination, its timeout, the abort, a resend.
  const timeoutMs =
    resolved.attemptTimeoutMs + 2 * resolved.abortWithinMs + resolved.receiveTimeoutMs + 10_000;
  describe(`transport conformance: ${name}`, () => {
    for (const check of transportChecks) {
      const skipped = options.skip?.[check.id];
      it(
        check.title,
        async (context) => {
          if (skipped !== undefined) context.skip(skipped);
          const subject = await factory({ runId: newRunId(), eventNames: CONFORMANCE_EVENT_NAMES });
          try {
            const reason = check.notApplicable?.(subject);
            if (reason) context.skip(reason);
            await check.run(subject, resolved);
          } finally {
            await closeSubject(subject);
          }
        },
        timeoutMs,
      );
    }
  });
}
