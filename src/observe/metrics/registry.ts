/**
 * The public face of `outbox.metrics()`, kept free of `prom-client`'s own types so that
 * `outboxkit`'s type declarations compile for an application that has not installed it.
 */

/**
 * What `outbox.metrics()` needs of a Prometheus registry, and returns: a `prom-client`
 * `Registry` (your own, or `register`, its global one) is one as it is.
 */
export interface MetricsRegistry {
  /** The `Content-Type` of {@link metrics}'s text (Prometheus' or OpenMetrics'). */
  readonly contentType: string;
  /** Every registered metric in the exposition format: what `/metrics` serves. */
  metrics(): Promise<string>;
  /** The metric of this name, if one is registered. */
  getSingleMetric(name: string): unknown;
}

/** Options of `outbox.metrics()`. */
export interface MetricsOptions {
  /**
   * How long one `health()` read serves the gauges, in milliseconds, so a scrape storm
   * (several Prometheus replicas, a dashboard refreshing) costs one statement per interval.
   * Measured on the outbox's clock.
   * @defaultValue 5000
   */
  readonly healthCacheMs?: number;
  /**
   * The schemas the gauges read, one `schema`-labelled series each (`sum()` them for the
   * whole backlog). Required (this or {@link tenants}) under a schema per tenant
   * (`settings.tenancy: 'schema'`): the outbox's own schema holds no tenant's events, so
   * gauges of it alone would show an empty outbox. Resolved as `runRelay({ schemas })`.
   * @defaultValue the outbox's own schema, unlabelled
   */
  readonly schemas?: readonly string[];
  /**
   * Under `settings.tenancy: 'schema'`, the tenants whose schemas the gauges read (each
   * labelled with its schema), as `runRelay({ tenants })`; refused under other tenancies.
   */
  readonly tenants?: readonly string[];
}
