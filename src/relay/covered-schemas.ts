/**
 * The schemas a read of the whole outbox covers (`countDeliveries({ schemas | tenants })`,
 * `outbox.metrics(registry, { schemas | tenants })`): under a schema per tenant
 * (`settings.tenancy: 'schema'`) the outbox's own schema holds no tenant's events, so a
 * count or a gauge of it alone would report an empty outbox while tenants' work piles up.
 * Resolved with the relay's rules ({@link servedSchemas}), refusing as it refuses.
 */
import type { DeliveryStatus } from '../declare/types.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import { servedSchemas } from './relay-schemas.js';

/** Which schemas a whole-outbox read covers: `schemas` names them, or `tenants` (their schemas). */
export interface CoveredSchemasOptions {
  /**
   * The schemas to read, summed (or, for the metrics' gauges, one `schema` label each).
   * Under any tenancy where the database has schemas; refused on SQLite and MariaDB.
   */
  readonly schemas?: readonly string[];
  /**
   * Under `settings.tenancy: 'schema'`, the tenants to read: each tenant's schema. Refused
   * under other tenancies (these reads do not narrow by the tenant column).
   */
  readonly tenants?: readonly string[];
}

/** The schemas a read covers: its runtimes, and whether they were named (labelled) or the own. */
export interface CoveredSchemas {
  /** One runtime per schema; the outbox's own alone when none were named. */
  readonly targets: readonly Runtime[];
  /** True when `schemas` or `tenants` named them (the gauges then carry a `schema` label). */
  readonly named: boolean;
}

/**
 * The schemas `caller` reads. Without `schemas` or `tenants`, the outbox's own — except
 * under a schema per tenant, where that is refused (it holds no tenant's events).
 * @throws {ConfigurationError} naming the option (`schemas`, or `tenants` outside schema
 * tenancy), as `runRelay({ schemas | tenants })` refuses.
 */
export function coveredSchemas(
  rt: Runtime,
  caller: string,
  options: CoveredSchemasOptions | undefined,
): CoveredSchemas {
  const served = servedSchemas(rt, caller, {
    schemas: options?.schemas,
    tenants: options?.tenants,
  });
  if (served.tenants !== undefined) {
    throw new ConfigurationError(
      `${caller}({ tenants }) reads a schema per tenant (settings.tenancy: 'schema'); this outbox keeps its tenants in a column, and ${caller} does not narrow by it — leave tenants out`,
      { path: 'tenants' },
    );
  }
  if (served.targets.length === 0) {
    throw new ConfigurationError(
      `${caller}({ tenants }) must name at least one tenant (got an empty list): a read of no schema would report an empty outbox`,
      { path: 'tenants' },
    );
  }
  return {
    targets: served.targets,
    named: options?.schemas !== undefined || options?.tenants !== undefined,
  };
}

/**
 * `countDeliveries({ schemas | tenants })`: the delivery rows by status of each schema
 * covered, summed (one statement per schema, in turn).
 * @throws {ConfigurationError} as {@link coveredSchemas}.
 */
export async function countAcross(
  rt: Runtime,
  options: CoveredSchemasOptions | undefined,
): Promise<Record<DeliveryStatus, number>> {
  const { targets } = coveredSchemas(rt, 'countDeliveries', options);
  const [first, ...rest] = targets;
  const total = await first.store.countDeliveries();
  for (const target of rest) {
    const counts = await target.store.countDeliveries();
    for (const status of Object.keys(counts) as DeliveryStatus[])
      total[status] = (total[status] ?? 0) + counts[status];
  }
  return total;
}
