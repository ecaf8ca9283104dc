/**
 * `outbox.metrics()`: the outbox's Prometheus metrics, registered on an application's own
 * registry (or a new one) with `prom-client`, loaded only when this is called.
 *
 * - `outbox_deliveries_total{receiver,outcome}` (counter): recorded verdicts, from the
 *   outbox's own observer events (`relay:delivered` → `succeeded`, `relay:failed` →
 *   `failed`, `relay:deadLettered` → `dead`, `relay:orphaned` → `orphaned`), so only what
 *   the database accepted is counted. Each durable receiver starts at zero for
 *   `succeeded`, `failed` and `dead`, so a `rate()` alert has a series before the first
 *   failure.
 * - `outbox_delivery_duration_seconds{receiver}` (histogram): each attempt (a handler's
 *   transaction, a `deliver` call, a `deliverBatch` call), timed by an `aroundDelivery`
 *   hook added innermost, so other hooks' own time is not counted.
 * - `outbox_claim_duration_seconds`, `outbox_record_duration_seconds` (histograms): the
 *   relay's two hot statements (`relay:claimed`, `relay:recorded`).
 * - `outbox_pruned_events_total`, `outbox_pruned_deliveries_total` (counters): what the
 *   relays' idle sweeps deleted (`relay:pruned`), so a retention that stopped working shows
 *   as a flat line beside a growing `outbox_deliveries_total`.
 * - `outbox_owed`, `outbox_oldest_owed_age_seconds`, `outbox_dead`, `outbox_scheduled`,
 *   `outbox_claimed`, `outbox_lapsed_leases` (gauges): read from `health()` at scrape time,
 *   one read serving every gauge for `healthCacheMs`. A read that fails is logged and the
 *   gauges read NaN for that scrape, rather than failing the application's whole scrape.
 *   Given `{ schemas }` or `{ tenants }` (required under a schema per tenant, where the
 *   outbox's own schema holds no tenant's events), each gauge has one series per schema,
 *   labelled `schema` (`sum(outbox_owed)` is the whole backlog; a schema whose read failed
 *   reads NaN alone).
 */
import type { Counter, Histogram, Registry } from 'prom-client';
import type { DeliveryStatus } from '../../declare/types.js';
import { ConfigurationError } from '../../errors/outbox-error.js';
import type { OutboxHealth } from '../../ops/health.js';
import type { Runtime } from '../../runtime.js';
import type { AroundDelivery } from '../around-delivery.js';
import { loadPromClient } from './load-prom-client.js';
import type { MetricsOptions, MetricsRegistry } from './registry.js';

/** The default of {@link MetricsOptions.healthCacheMs}. */
export const DEFAULT_HEALTH_CACHE_MS = 5_000;

/** The relay's statements take milliseconds: finer buckets than prom-client's defaults. */
const STATEMENT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * One schema's `health()` read for the gauges: `schema` is its `schema` label's value, or
 * undefined for the outbox's own schema read unlabelled (no `{ schemas | tenants }` given).
 */
export interface HealthSource {
  readonly schema: string | undefined;
  readonly read: () => Promise<OutboxHealth>;
}

/** The registries each outbox (by its runtime) has registered on: a second call returns. */
const registered = new WeakMap<Runtime, WeakSet<object>>();

/**
 * Register the outbox's metrics on `registry` (a new `prom-client` Registry when omitted)
 * and return it. Calling it again with the same registry returns it unchanged. The gauges
 * read `sources` (the `health()` of each schema covered, handed in by `createOutbox`:
 * observe/ ranks below ops/, so it never imports it); labelled by schema when `sources`
 * name their schemas.
 * @throws {ConfigurationError} without `prom-client` installed, for something that is not
 * a registry, for a bad `healthCacheMs`, or for a registry that already holds another
 * outbox's metrics.
 */
export function registerOutboxMetrics<R extends MetricsRegistry>(
  rt: Runtime,
  sources: readonly HealthSource[],
  registry: R | undefined,
  options: MetricsOptions = {},
): R {
  const prom = loadPromClient();
  const cacheMs = options.healthCacheMs ?? DEFAULT_HEALTH_CACHE_MS;
  if (!Number.isFinite(cacheMs) || cacheMs < 0) {
    throw new ConfigurationError(
      `outbox.metrics(registry, { healthCacheMs }) must be a number of milliseconds ≥ 0 (got ${String(cacheMs)})`,
      { path: 'healthCacheMs' },
    );
  }
  const target = (registry ?? new prom.Registry()) as unknown as Registry;
  if (
    typeof target !== 'object' ||
    target === null ||
    typeof (target as Partial<Registry>).registerMetric !== 'function' ||
    typeof (target as Partial<Registry>).metrics !== 'function'
  ) {
    throw new ConfigurationError(
      'outbox.metrics(registry) takes a prom-client Registry (new Registry(), or prom-client’s `register`); got something else',
      { path: 'registry' },
    );
  }
  const seen = registered.get(rt) ?? new WeakSet<object>();
  registered.set(rt, seen);
  if (seen.has(target)) return target as unknown as R;
  if (target.getSingleMetric('outbox_deliveries_total')) {
    throw new ConfigurationError(
      'outbox.metrics(registry): this registry already holds the metrics of another outbox; give each outbox a registry of its own (prom-client’s Registry.merge joins them for one endpoint)',
      { path: 'registry' },
    );
  }
  const registers = [target];

  const deliveries = new prom.Counter({
    name: 'outbox_deliveries_total',
    help: 'Delivery verdicts recorded, by receiver and outcome (succeeded, failed, dead, orphaned).',
    labelNames: ['receiver', 'outcome'] as const,
    registers,
  });
  for (const r of rt.config.receivers) {
    if (r.mode !== 'durable') continue;
    for (const outcome of ['succeeded', 'failed', 'dead'] as const)
      deliveries.inc({ receiver: r.key, outcome }, 0);
  }
  countVerdicts(rt, deliveries);

  const attempt = new prom.Histogram({
    name: 'outbox_delivery_duration_seconds',
    help: 'How long each delivery attempt took (a handler with its transaction, one deliver or deliverBatch call), by receiver.',
    labelNames: ['receiver'] as const,
    registers,
  });
  rt.aroundDelivery = [...(rt.aroundDelivery ?? []), timingHook(attempt)];

  const claim = new prom.Histogram({
    name: 'outbox_claim_duration_seconds',
    help: 'How long one claim statement took.',
    buckets: STATEMENT_BUCKETS,
    registers,
  });
  const record = new prom.Histogram({
    name: 'outbox_record_duration_seconds',
    help: "How long one statement recording a batch's outcomes took.",
    buckets: STATEMENT_BUCKETS,
    registers,
  });
  rt.events.on('relay:claimed', ({ durationMs }) => claim.observe(durationMs / 1000));
  rt.events.on('relay:recorded', ({ durationMs }) => record.observe(durationMs / 1000));

  const prunedEvents = new prom.Counter({
    name: 'outbox_pruned_events_total',
    help: "Events deleted by this process's relays' idle sweeps.",
    registers,
  });
  const prunedDeliveries = new prom.Counter({
    name: 'outbox_pruned_deliveries_total',
    help: "Delivery rows deleted by this process's relays' idle sweeps.",
    registers,
  });
  rt.events.on('relay:pruned', ({ events, deliveries }) => {
    prunedEvents.inc(events);
    prunedDeliveries.inc(deliveries);
  });

  const read = cachedHealth(rt, sources, cacheMs);
  const labelled = sources.some((s) => s.schema !== undefined);
  const gauge = (name: string, help: string, value: (h: OutboxHealth) => number) =>
    new prom.Gauge({
      name,
      help,
      labelNames: labelled ? (['schema'] as const) : [],
      registers,
      async collect() {
        const healths = await read();
        sources.forEach((source, i) => {
          const health = healths[i];
          const v = health ? value(health) : Number.NaN;
          if (source.schema === undefined) this.set(v);
          else this.set({ schema: source.schema }, v);
        });
      },
    });
  gauge(
    'outbox_owed',
    'Deliveries due and not settled (pending, failed or claimed, their due time come).',
    (h) => h.owed,
  );
  gauge(
    'outbox_oldest_owed_age_seconds',
    'Seconds since the oldest owed delivery became owed (its due time, else its event’s record time); 0 when nothing is owed.',
    (h) => (h.oldestOwedAt ? Math.max(0, (h.at.getTime() - h.oldestOwedAt.getTime()) / 1000) : 0),
  );
  gauge('outbox_dead', 'Dead-lettered deliveries, waiting for a person.', (h) => h.dead);
  gauge(
    'outbox_scheduled',
    'Deliveries not settled whose due time is still ahead (not owed).',
    (h) => h.scheduled,
  );
  gauge('outbox_claimed', 'Owed deliveries a worker holds right now.', (h) => h.claimed);
  gauge(
    'outbox_lapsed_leases',
    'Claimed deliveries whose lease has expired (workers dying mid-delivery, or receivers outrunning their lease).',
    (h) => h.lapsedLeases,
  );
  seen.add(target);
  return target as unknown as R;
}

/** Count each recorded verdict the relay reports. */
function countVerdicts(rt: Runtime, counter: Counter<'receiver' | 'outcome'>): void {
  const count = (outcome: DeliveryStatus) => (e: { receiverKey: string }) =>
    counter.inc({ receiver: e.receiverKey, outcome });
  rt.events.on('relay:delivered', count('succeeded'));
  rt.events.on('relay:failed', count('failed'));
  rt.events.on('relay:deadLettered', count('dead'));
  rt.events.on('relay:orphaned', count('orphaned'));
}

/**
 * An `aroundDelivery` hook timing each attempt on the monotonic clock (a measurement, not a
 * decision, so not the runtime's clock that tests move). It only observes: `next()` never
 * rejects.
 */
function timingHook(histogram: Histogram<'receiver'>): AroundDelivery {
  return async (attempt, next) => {
    const started = performance.now();
    await next();
    histogram.observe({ receiver: attempt.receiverKey }, (performance.now() - started) / 1000);
  };
}

/**
 * One `health()` read per schema, shared by every gauge of a scrape and by the scrapes
 * within `cacheMs` of it (on the outbox's clock). Each read that failed (logged) resolves
 * undefined, leaving the others' values.
 */
function cachedHealth(
  rt: Runtime,
  sources: readonly HealthSource[],
  cacheMs: number,
): () => Promise<readonly (OutboxHealth | undefined)[]> {
  let cached:
    | {
        readonly atMs: number;
        readonly value: Promise<readonly (OutboxHealth | undefined)[]>;
      }
    | undefined;
  return () => {
    const nowMs = rt.clock().getTime();
    if (cached && nowMs - cached.atMs < Math.max(cacheMs, 1) && nowMs >= cached.atMs)
      return cached.value;
    const value = Promise.all(
      sources.map((source) =>
        source.read().catch((error: unknown) => {
          rt.logger.warn(
            'outbox.metrics(): could not read health() for the gauges; they read NaN',
            source.schema === undefined ? { error } : { error, schema: source.schema },
          );
          return undefined;
        }),
      ),
    );
    cached = { atMs: nowMs, value };
    return value;
  };
}
