/**
 * Relay schemas (`runRelay({ schemas })`, `deliverPending({ schemas })`): ONE relay serving
 * the outboxes of a declared set of schemas — a schema per tenant (`settings.tenancy:
 * 'schema'`, PostgreSQL). The relay's claims go round the schemas in turn, a batch from
 * each, passing over a schema with nothing owed, so a tenant with a backlog of thousands
 * gets one batch per round like every other and never starves a quiet one; the relay idles
 * only once a whole round found nothing.
 */
import { ConfigurationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import { checkSchemas } from '../storage/tenant-schemas.js';
import type { IdleSweep } from './idle-prune.js';
import { checkTenants } from './relay-tenants.js';

/** What a relay serves: the runtime of each schema, and the tenant filter its claims keep. */
export interface ServedSchemas {
  /** One runtime per schema, in the order claims visit them; the outbox's own alone by default. */
  readonly targets: readonly Runtime[];
  /** The tenant column filter of each claim (none when the schemas did the narrowing). */
  readonly tenants: readonly string[] | undefined;
  readonly excludeTenants: readonly string[] | undefined;
}

/**
 * The schemas `caller` serves, checked. `schemas` names them (any tenancy, where the
 * database has schemas; refused, naming the dialect, elsewhere). Under `settings.tenancy:
 * 'schema'`, `tenants` names them instead (each tenant's schema), and one of the two is
 * required: a relay cannot list a database's schemas, and the outbox's own schema holds no
 * tenant's events. `excludeTenants` needs such a list, so it is refused there.
 * @throws {ConfigurationError} naming the option.
 */
export function servedSchemas(
  rt: Runtime,
  caller: string,
  options: {
    readonly schemas?: readonly string[] | undefined;
    readonly tenants?: readonly string[] | undefined;
    readonly excludeTenants?: readonly string[] | undefined;
  },
): ServedSchemas {
  const tenants = checkTenants(rt.config, caller, 'tenants', options.tenants);
  const excludeTenants = checkTenants(rt.config, caller, 'excludeTenants', options.excludeTenants);
  const bySchema = rt.config.settings.tenancy === 'schema';
  if (bySchema && excludeTenants !== undefined) {
    throw new ConfigurationError(
      `${caller}({ excludeTenants }) cannot serve a schema per tenant (settings.tenancy: 'schema'): a relay serves the schemas it is given; name them with schemas (or tenants)`,
      { path: 'excludeTenants' },
    );
  }
  if (options.schemas === undefined && !(bySchema && tenants !== undefined)) {
    if (bySchema) {
      throw new ConfigurationError(
        `${caller}() on an outbox with a schema per tenant (settings.tenancy: 'schema') needs the schemas it serves: ${caller}({ schemas: ['acme', …] }) or ${caller}({ tenants: […] }) (CLI: --schemas / --tenant)`,
        { path: 'schemas' },
      );
    }
    return { targets: [rt], tenants, excludeTenants };
  }
  const schemas = new Set(
    options.schemas === undefined ? [] : checkSchemas(rt, caller, options.schemas),
  );
  if (bySchema && tenants !== undefined)
    for (const tenant of tenants) schemas.add(rt.tenantSchemas!.schemaOf(tenant));
  return {
    targets: [...schemas].map((schema) => rt.tenantSchemas!.runtimeOf(schema)),
    // Under schema tenancy the schemas narrowed it; a tenants list beside schemas elsewhere
    // still narrows each schema's claims by the column.
    tenants: bySchema ? undefined : tenants,
    excludeTenants,
  };
}

/**
 * The claims' turn: which schema the next claim visits, and whether a whole round came
 * back empty (then, and only then, the relay is idle).
 */
export class SchemaRound {
  readonly #targets: readonly Runtime[];
  #next = 0;
  #empty = 0;

  constructor(targets: readonly Runtime[]) {
    this.#targets = targets;
  }

  /** The runtime the next claim visits; the turn moves on. */
  take(): Runtime {
    const target = this.#targets[this.#next];
    this.#next = (this.#next + 1) % this.#targets.length;
    return target;
  }

  /** Whether the round is under way: the claims since the last non-empty one found nothing yet. */
  get midRound(): boolean {
    return this.#empty > 0;
  }

  /**
   * Record what the last claim found; true when the relay should claim from the next schema
   * at once (an empty claim that has not yet made a whole empty round).
   */
  claimed(rows: number): boolean {
    if (rows > 0) {
      this.#empty = 0;
      return false;
    }
    this.#empty += 1;
    if (this.#empty < this.#targets.length) return true;
    this.#empty = 0;
    return false;
  }
}

/** The idle sweeps of a relay's schemas as one: each prunes its own schema's history. */
export interface Sweeps {
  readonly unfinished: boolean;
  maybe(signal: AbortSignal, woken: () => boolean, yieldAfterMs: number): Promise<void>;
}

/** One sweep for several schemas' (each its own), or the single sweep itself. */
export function sweepsOf(sweeps: readonly (IdleSweep | undefined)[]): Sweeps | undefined {
  const live = sweeps.filter((s): s is IdleSweep => s !== undefined);
  if (live.length <= 1) return live[0];
  return {
    get unfinished() {
      return live.some((s) => s.unfinished);
    },
    async maybe(signal, woken, yieldAfterMs) {
      for (const sweep of live) {
        await sweep.maybe(signal, woken, yieldAfterMs);
        // A sweep that yielded to work: the rest wait for the next idle pass.
        if (sweep.unfinished || signal.aborted || woken()) return;
      }
    },
  };
}
