/**
 * Relay tenants (`runRelay({ tenants, excludeTenants })`), narrowing a relay the way its
 * topics do (relay-topics.ts): a relay of some tenants claims, delivers and counts only
 * their events, so a large tenant can have relays of its own beside the rest's. An event
 * without a tenant is served only by a relay without `tenants`.
 */
import type { OutboxConfig } from '../declare/define-outbox.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import { tenantProblem } from '../scope/tenant.js';

/**
 * Check a tenant list of `caller` (a relay's, an operation's), refusing with a
 * ConfigurationError naming the option and the entry: an outbox without tenancy, a list
 * that is no array, a name no tenant can have. `undefined` passes (no filter).
 */
export function checkTenants(
  config: OutboxConfig,
  caller: string,
  option: 'tenants' | 'excludeTenants' | 'tenant',
  tenants: readonly string[] | undefined,
): readonly string[] | undefined {
  if (tenants === undefined) return undefined;
  if (config.settings.tenancy === 'none') {
    throw new ConfigurationError(
      `${caller}({ ${option} }) narrows by tenant, but this outbox keeps no tenants; declare defineOutbox({ settings: { tenancy: 'column' } }) or drop ${option}`,
      { path: option },
    );
  }
  if (!Array.isArray(tenants)) {
    throw new ConfigurationError(
      `${caller}({ ${option} }) must be an array of tenant names (got ${String(tenants)})`,
      { path: option },
    );
  }
  for (const tenant of tenants) {
    const problem = tenantProblem(tenant);
    if (problem)
      throw new ConfigurationError(`${caller}({ ${option} }): a tenant ${problem}`, {
        path: option,
      });
  }
  return tenants;
}
