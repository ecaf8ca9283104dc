/**
 * The tenant scope (`withTenant('acme', fn)`), the sibling of `attributed()`: every event
 * fired inside `fn` without a tenant of its own belongs to the block's tenant, on an outbox
 * with `settings.tenancy: 'column'` (docs/tenants.md). Carried on the same
 * `AsyncLocalStorage` frame as the attribution, so `fire()` still reads the whole ambient
 * state with one `getStore()`, and a receiver's events inherit its event's tenant through
 * `causedBy` the way they inherit its correlation id.
 */
import { ValidationError } from '../errors/outbox-error.js';
import { frames } from './frame.js';
import { emptyScope, type Scope } from './scope.js';

/** The longest tenant name: short enough to stay beside a 255-character key in one column. */
export const MAX_TENANT = 64;

/** Whether `text` holds a control character (one of them separates a tenant from a key). */
function hasControl(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/**
 * Why `tenant` is no tenant name (1 to {@link MAX_TENANT} characters, no control
 * characters), or undefined when it is one.
 */
export function tenantProblem(tenant: unknown): string | undefined {
  if (typeof tenant !== 'string' || tenant.length === 0 || tenant.length > MAX_TENANT)
    return `must be a string of 1 to ${MAX_TENANT} characters (got ${JSON.stringify(tenant)})`;
  if (hasControl(tenant))
    return `must not contain control characters (got ${JSON.stringify(tenant)})`;
  return undefined;
}

/**
 * Run `fn` for `tenant`: each event fired inside it that names no tenant of its own is the
 * tenant's (its row's `tenant` column, its keys unique and ordered per tenant, its
 * deliveries' `context.tenant`). An inner block's tenant wins; `null` clears it for the
 * block. The rest of the scope (actor, correlation id, data, suppressions) is inherited.
 *
 * Only an outbox declared with `settings: { tenancy: 'column' }` or `'schema'` records a
 * tenant (under `'schema'`, the block's tenant also picks the schema its events are written
 * to, and a write outside any block is refused there): on one without tenancy, `fire()` inside a block with a tenant is refused, so an event is never silently
 * recorded without the tenant its code meant it for.
 *
 * @returns what `fn` returns (its promise, for an async `fn`).
 * @throws {ValidationError} for a tenant name that is not 1 to 64 characters without control
 *   characters, before `fn` runs.
 *
 * @example
 * ```ts
 * app.use((req, _res, next) => withTenant(req.user.tenantId, next));
 * ```
 */
export function withTenant<T>(tenant: string | null, fn: (scope: Scope) => T): T {
  if (tenant !== null) {
    const problem = tenantProblem(tenant);
    if (problem)
      throw new ValidationError(`withTenant(): the tenant ${problem}`, { path: 'tenant' });
  }
  if (typeof fn !== 'function') {
    throw new ValidationError('withTenant(): the second argument must be the function to run');
  }
  const outer = frames.getStore();
  const scope: Scope = Object.freeze({ ...(outer?.scope ?? emptyScope()), tenant });
  const frame = {
    scope,
    headers: outer?.headers ?? null,
    suppressions: outer?.suppressions ?? [],
  };
  return frames.run(frame, fn, scope);
}
