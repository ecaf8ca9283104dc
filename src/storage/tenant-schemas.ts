/**
 * A schema per tenant (`settings.tenancy: 'schema'`, PostgreSQL): each tenant's outbox
 * tables live in a schema of its own, named by `createOutbox({ tenantSchema })`. This
 * module maps a tenant to its schema and keeps ONE store per schema (with its table names,
 * the same prefix in every schema), made on first use and cached, as the runtime of that
 * schema: the outbox's own runtime with the schema's store and tables, so fire, the relay
 * and the operations run unchanged on it.
 */
import { ConfigurationError } from '../errors/outbox-error.js';
import type { Runtime, TenantSchemas } from '../runtime.js';
import type { DialectEntry, StoreOptions } from './dialect-entry.js';
import { tableNames } from './tables.js';

/** A schema name the outbox accepts: what `tableNames` accepts (letters, digits and _). */
const SCHEMA = /^[A-Za-z_][A-Za-z0-9_]{0,50}$/;

/**
 * The schema of a tenant under the default mapping: the tenant's own name, when it is a
 * plain identifier (letters, digits and `_`, not starting with a digit, at most 51
 * characters). Any other tenant name needs a `tenantSchema` of its own, so two tenants can
 * never land in one schema through a lossy rewrite.
 */
export function defaultTenantSchema(tenant: string): string {
  return tenant;
}

/**
 * Check a schema name (of `runRelay({ schemas })`, `migrate({ schemas })`, a
 * `tenantSchema`'s answer), refusing with a ConfigurationError naming `where`.
 */
export function checkSchemaName(schema: unknown, where: string): string {
  if (typeof schema !== 'string' || !SCHEMA.test(schema)) {
    throw new ConfigurationError(
      `${where}: a schema must be 1 to 51 letters, digits and _, not starting with a digit (got ${JSON.stringify(schema)})`,
      { path: 'schemas' },
    );
  }
  return schema;
}

/** What {@link tenantSchemas} needs of the outbox being made. */
export interface TenantSchemasOptions {
  readonly entry: DialectEntry;
  readonly prefix: string;
  readonly storeOptions: StoreOptions;
  /** The tenant → schema mapping (`createOutbox({ tenantSchema })`). */
  readonly tenantSchema: (tenant: string) => string;
}

/**
 * The {@link TenantSchemas} of `base` (the outbox's own runtime, made before this): a
 * schema's runtime is `base` with that schema's store and tables in front, made once.
 */
export function tenantSchemas(
  base: () => Runtime,
  { entry, prefix, storeOptions, tenantSchema }: TenantSchemasOptions,
): TenantSchemas {
  const runtimes = new Map<string, Runtime>();
  const schemas: TenantSchemas = {
    schemaOf(tenant) {
      const schema = tenantSchema(tenant);
      return checkSchemaName(
        schema,
        `the schema of the tenant ${JSON.stringify(tenant)} (createOutbox({ tenantSchema }) maps a tenant name that is no schema name to one)`,
      );
    },
    runtimeOf(schema) {
      let rt = runtimes.get(schema);
      if (rt === undefined) {
        const outer = base();
        const tables = tableNames(prefix, checkSchemaName(schema, 'a tenant schema'));
        const store = entry.createStore(outer.sequelize, tables, storeOptions);
        // The outbox's runtime behind, read through the prototype: a later change to it
        // (metrics() appending its hook, the task backend set once the outbox exists) shows.
        rt = Object.create(outer, {
          store: { value: store, enumerable: true },
          tables: { value: tables, enumerable: true },
          schema: { value: schema, enumerable: true },
        }) as Runtime;
        runtimes.set(schema, rt);
      }
      return rt;
    },
  };
  return schemas;
}

/**
 * A list of schemas given to `where` (`runRelay({ schemas })`, `migrate({ schemas })`),
 * checked: refused, naming the dialect and what to use instead, on a database without
 * schemas; refused when empty, repeated, or holding a name no schema can have.
 */
export function checkSchemas(rt: Runtime, where: string, schemas: unknown): readonly string[] {
  if (rt.tenantSchemas === undefined) {
    throw new ConfigurationError(
      `${where}({ schemas }) serves a schema per tenant, which ${rt.dialect.title} does not have; keep tenants apart by the tenant column instead (settings: { tenancy: 'column' }, runRelay({ tenants }))`,
      { path: 'schemas' },
    );
  }
  if (!Array.isArray(schemas) || schemas.length === 0) {
    throw new ConfigurationError(
      `${where}({ schemas }) must be a non-empty array of schema names (got ${JSON.stringify(schemas)})`,
      { path: 'schemas' },
    );
  }
  const seen = new Set<string>();
  for (const schema of schemas) {
    checkSchemaName(schema, `${where}({ schemas })`);
    if (seen.has(schema)) {
      throw new ConfigurationError(`${where}({ schemas }) names the schema ${schema} twice`, {
        path: 'schemas',
      });
    }
    seen.add(schema);
  }
  return schemas as readonly string[];
}

/**
 * Run an operation narrowed to `options.tenant` (`health`, `deadLetters`, …): under
 * `settings.tenancy: 'schema'`, on the tenant's schema, without the tenant column filter (the
 * schema IS the tenant, whatever its rows' column says: the CLI, which has no `tenantSchema`,
 * names a schema by its tenant); otherwise, and without a tenant, on the outbox's own
 * runtime as given.
 */
export function onTenantSchema<O extends { readonly tenant?: string } | undefined, R>(
  rt: Runtime,
  options: O,
  operation: (rt: Runtime, options: O) => R,
): R {
  const tenant = options?.tenant;
  if (rt.config.settings.tenancy !== 'schema' || tenant === undefined)
    return operation(rt, options);
  const schemas = rt.tenantSchemas!;
  const schemaRt = schemas.runtimeOf(schemas.schemaOf(tenant));
  return operation(schemaRt, { ...options, tenant: undefined } as O);
}
