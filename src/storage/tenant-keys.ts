/**
 * How a tenant's idempotency and ordering keys are stored (docs/storage.md, "Tenants"):
 * in the same `idempotency_key` and `ordering_key` columns, prefixed with the tenant and
 * the unit separator U+001F, which no tenant name contains. So the one unique index of
 * idempotency keys (events_idempotency) holds them unique per tenant, the claim's ordering
 * check (deliveries_ordering, on the copy of the key each delivery row keeps) treats the
 * same key of two tenants as two keys, and PostgreSQL's key locks hash them apart, with
 * no column, index or statement of their own: an event without a tenant stores its keys
 * as before, byte for byte.
 *
 * The prefix is the storage's business: every read of an event row strips it
 * ({@link unscopedKey}), so an event, a delivery and `fire()`'s answer carry the key as
 * it was given.
 */

/** Separates a tenant from its key in a stored key. */
export const TENANT_KEY_SEPARATOR = '\u001f';

/** The key as stored for `tenant`: `tenant␟key`, or the key itself without a tenant. */
export function scopedKey(tenant: string | null, key: string | null): string | null {
  return key === null || tenant === null ? key : `${tenant}${TENANT_KEY_SEPARATOR}${key}`;
}

/** The key as given, from its stored form for `tenant` (the inverse of {@link scopedKey}). */
export function unscopedKey(tenant: string | null, stored: string | null): string | null {
  if (stored === null || tenant === null) return stored;
  const prefix = `${tenant}${TENANT_KEY_SEPARATOR}`;
  return stored.startsWith(prefix) ? stored.slice(prefix.length) : stored;
}
