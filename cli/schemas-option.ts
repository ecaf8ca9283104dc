/**
 * `--schemas a,b,c`: the schemas of a schema per tenant (`settings.tenancy: 'schema'`,
 * PostgreSQL) that `migrate` migrates (and `--check` checks) and that one `relay` serves
 * round robin. The outbox's tables in each are the same (`--table-prefix`); `--schema` names
 * the outbox's own schema, which is a different thing, so the two are not taken together.
 */
import { type Command, InvalidArgumentError } from 'commander';
import type { Sequelize } from 'sequelize';
import type { OutboxConfig } from '../src/declare/define-outbox.js';
import { ConfigurationError } from '../src/errors/outbox-error.js';
import { dialectOf } from '../src/storage/dialects.js';
import { type TableNames, tableNames } from '../src/storage/tables.js';

/** The flag as commander hands it over. */
export interface SchemasFlags {
  readonly schema?: string;
  readonly tablePrefix?: string;
  /** `--schemas a,b,c`. */
  readonly schemas?: readonly string[];
}

/** Parse `a,b,c` into its names (blanks around commas dropped); an empty list is refused. */
function schemaList(value: string): string[] {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (names.length === 0) throw new InvalidArgumentError('expected schema names, a,b,c.');
  return names;
}

/** Declare `--schemas` on `command`, saying what `what` does with them. */
export function schemasOption(command: Command, what: string): Command {
  return command.option(
    '--schemas <names>',
    `PostgreSQL, a schema per tenant: ${what} (comma-separated: acme,globex)`,
    schemaList,
  );
}

/**
 * The table names of each schema `--schemas` names, or undefined without it; refused
 * beside `--schema` (the outbox's own schema is no tenant's).
 */
export function schemaTables(flags: SchemasFlags): readonly TableNames[] | undefined {
  if (flags.schemas === undefined) return undefined;
  if (flags.schema !== undefined) {
    throw new ConfigurationError(
      '--schemas names the tenant schemas, --schema the outbox’s own: pass one of them',
      { path: 'schemas' },
    );
  }
  return flags.schemas.map((schema) => tableNames(flags.tablePrefix ?? 'outbox_', schema));
}

/**
 * Refuse `--schemas` (or a schema per tenant) on a database without schemas, naming it and
 * what to use instead, before a statement names a `schema.table` it cannot resolve.
 */
export function refuseWithoutSchemas(
  sequelize: Sequelize,
  schemas: readonly string[] | undefined,
): void {
  if (schemas === undefined) return;
  const entry = dialectOf(sequelize);
  if (entry.capabilities.schemas) return;
  throw new ConfigurationError(
    `--schemas serves a schema per tenant, which ${entry.title} does not have; keep tenants apart by the tenant column instead (settings: { tenancy: 'column' }, --tenant)`,
    { path: 'schemas' },
  );
}

/**
 * The schemas a relay of `config` serves from the CLI: `--schemas`, or under a schema
 * per tenant the tenants' own (`--tenant acme`: the CLI has no `tenantSchema` mapping, so
 * a tenant's schema is its name there; pass `--schemas` for any other naming).
 */
export function relaySchemas(
  config: OutboxConfig,
  flags: SchemasFlags & { readonly tenant?: readonly string[] },
): readonly string[] | undefined {
  const byTenant = config.settings.tenancy === 'schema' ? (flags.tenant ?? []) : [];
  const schemas = [...new Set([...(flags.schemas ?? []), ...byTenant])];
  return schemas.length === 0 ? undefined : schemas;
}
