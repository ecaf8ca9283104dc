/**
 * `outbox relay`: deliver owed events until SIGTERM/SIGINT, or with `--once` until nothing
 * is owed. It refuses to start on a database without the outbox tables, stops on a
 * database error that is not transient, and exits with the codes of exit-codes.ts.
 *
 * Stopping: the first SIGTERM/SIGINT (or the abort of `io.signal`, which stands in for
 * them in-process) lets the deliveries in hand finish and hands the unstarted rows back at
 * once (runRelay's signal). If they have not finished after `--shutdown-timeout`, or at a
 * second signal, the relay hands the deliveries still in flight back at once (their
 * leases do, where it cannot), names them and exits 3.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { type Command, Option } from 'commander';
import { DEFAULT_LANE } from '../../src/declare/define-outbox.js';
import { ConfigurationError } from '../../src/errors/outbox-error.js';
import { createOutbox, type Outbox } from '../../src/outbox.js';
import { servedLanes } from '../../src/relay/lanes.js';
import { checkTenants } from '../../src/relay/relay-tenants.js';
import { checkTopics } from '../../src/relay/relay-topics.js';
import type { RelayReport } from '../../src/relay/run-relay.js';
import { isTransientDatabaseError } from '../../src/relay/transient.js';
import { runtimeOf } from '../../src/runtime.js';
import { dialectOf } from '../../src/storage/dialects.js';
import { toDateOrNull } from '../../src/storage/rows.js';
import { type TableNames, tableNames } from '../../src/storage/tables.js';
import { EXIT } from '../exit-codes.js';
import { type CliIo, onStopRequest } from '../io.js';
import type { CliOutput } from '../log-format.js';
import { type MetricsServer, serveMetrics } from '../metrics-server.js';
import { relayWakeup } from '../operation.js';
import { type ConnectionFlags, connectionOptions, integer } from '../options.js';
import { schemaStatus } from '../schema-status.js';
import {
  refuseWithoutSchemas,
  relaySchemas,
  type SchemasFlags,
  schemasOption,
  schemaTables,
} from '../schemas-option.js';
import { openSession, type Session } from '../session.js';
import { noTaskBackend, refuseTaskLanes } from '../task-backend.js';
import { parseDurationMs } from './health.js';

export interface RelayFlags extends ConnectionFlags, SchemasFlags {
  readonly once?: boolean;
  readonly batchSize?: number;
  readonly concurrency?: number;
  readonly allowUnsafeConcurrency?: boolean;
  readonly shutdownTimeout: number;
  /** `--lane`: the lane served (the default lane when omitted). */
  readonly lane?: string;
  /** `--summary-interval`, in milliseconds. */
  readonly summaryInterval?: number;
  /** `--all-lanes`: serve every lane. */
  readonly allLanes?: boolean;
  /** `--exclude-lane` (repeatable). */
  readonly excludeLane?: readonly string[];
  /** `--topic` (repeatable). */
  readonly topic?: readonly string[];
  /** `--exclude-topic` (repeatable). */
  readonly excludeTopic?: readonly string[];
  /** `--tenant` (repeatable): serve only these tenants' events. */
  readonly tenant?: readonly string[];
  /** `--exclude-tenant` (repeatable). */
  readonly excludeTenant?: readonly string[];
  /** `--metrics-port`: serve Prometheus metrics at /metrics on this port (0: any free one). */
  readonly metricsPort?: number;
  /** `--metrics-host`: the address the metrics endpoint binds. */
  readonly metricsHost: string;
}

/** Collect a repeatable option's values. */
const repeatable = (value: string, previous: readonly string[] | undefined): string[] => [
  ...(previous ?? []),
  value,
];

/** The default of `--shutdown-timeout`: below Kubernetes' 30 s grace period. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 25_000;

/** Declare the command's options on `command`. */
export function relayCommand(command: Command): Command {
  schemasOption(
    command,
    'serve the outboxes of all of them from this one relay, round robin (each must be migrated: migrate --schemas)',
  );
  return connectionOptions(
    command.description(
      'deliver owed events until SIGTERM/SIGINT (or, with --once, until none is owed)',
    ),
  )
    .option('--once', 'claim until nothing is owed, then exit (exit 2 on failures or dead letters)')
    .option(
      '--batch-size <n>',
      'rows per claim (1–10000; default: settings.batchSize)',
      integer(1, 10_000),
    )
    .option('--concurrency <n>', 'deliveries at once (PostgreSQL; default 10)', integer(1, 1000))
    .addOption(
      new Option(
        '--lane <lane>',
        'serve only the receivers declared with this lane (default: the default lane, every row no named lane takes)',
      ).conflicts('allLanes'),
    )
    .option('--all-lanes', 'serve every lane (a single relay, e.g. in development)')
    .option(
      '--exclude-lane <lane>',
      'leave a lane out (repeatable; with --all-lanes: every lane but these)',
      repeatable,
    )
    .option(
      '--topic <topic>',
      'serve only these topics: a name or a prefix pattern such as "library.*" (repeatable)',
      repeatable,
    )
    .option(
      '--exclude-topic <topic>',
      'leave these topics to other relays (repeatable)',
      repeatable,
    )
    .option(
      '--tenant <name>',
      "serve only these tenants' events (repeatable; settings.tenancy: 'column'; under 'schema', the schemas of these names)",
      repeatable,
    )
    .option(
      '--exclude-tenant <name>',
      "leave these tenants' events to other relays (repeatable)",
      repeatable,
    )
    .addOption(
      new Option(
        '--shutdown-timeout <ms>',
        'after SIGTERM/SIGINT, how long the deliveries in hand may take before they are handed back unfinished (exit 3)',
      )
        .argParser(integer(0))
        .default(DEFAULT_SHUTDOWN_TIMEOUT_MS),
    )
    .option(
      '--metrics-port <port>',
      'serve Prometheus metrics at http://<metrics-host>:<port>/metrics while the relay runs (0: any free port, logged)',
      integer(0, 65_535),
    )
    .option(
      '--metrics-host <host>',
      'the address the metrics endpoint listens on (0.0.0.0 to be scraped from other hosts)',
      '127.0.0.1',
    )
    .option(
      '--summary-interval <duration>',
      'log one line (info) this often: delivered, failed, dead since the last one, owed now (default 60s; 0s: none)',
      parseDurationMs,
    )
    .option(
      '--allow-unsafe-concurrency',
      'SQLite: start even though another relay holds the single-relay lock (only when you know it is gone)',
    )
    .addHelpText(
      'after',
      `
The database, first found wins:
  --url <url>, then OUTBOX_DATABASE_URL, then DATABASE_URL, then the \`sequelize\` the config
  exports. With none of them the relay refuses to start. When the config exports a sequelize,
  a URL naming another database is refused (its models are bound to the config's Sequelize)
  unless --use-url-over-config.

Lanes and topics:
  A relay serves one lane: \`--lane mail\` claims only the receivers declared with
  \`lane: 'mail'\`; without --lane it serves the default lane, every row no named lane takes
  (rows of a deleted receiver included, recorded orphaned), so the default relay stays out
  of a slow lane. \`--all-lanes\` serves every lane; \`--exclude-lane\` leaves lanes out.
  --once serves the default lane too unless told otherwise. A lane no receiver declares is
  refused (exit 1). \`--topic library.*\` / \`--exclude-topic taskiq\` split the table by
  topic between relays (names, or prefix patterns ending in one *).

Metrics:
  --metrics-port 9464 serves /metrics (prom-client, which must be installed): deliveries by
  receiver and outcome (outbox_deliveries_total), attempt, claim and record durations, and
  gauges read from health() at scrape time (outbox_owed, outbox_oldest_owed_age_seconds,
  outbox_dead, outbox_scheduled, outbox_claimed, outbox_lapsed_leases). Closed on shutdown.

Exit codes:
  0  --once: every delivery succeeded; without --once: stopped by SIGTERM/SIGINT and drained
  1  could not run: no or bad config, no database, unreachable within --connect-timeout,
     outbox tables missing (run \`npx outbox migrate\`), a database error that is not transient
  2  --once: deliveries failed (they will be retried), dead-lettered, or orphaned
  3  stopped, and --shutdown-timeout passed with deliveries in flight: they were handed
     back for the next relay (or, where that could not run, left to their leases)

In production, run the bin itself (\`node node_modules/.bin/outbox relay\`, or \`outbox relay\`
in a package script run by your process manager), not \`npx\`, so SIGTERM reaches the relay.`,
    );
}

export async function relay(flags: RelayFlags, out: CliOutput, io: CliIo): Promise<number> {
  const session = await openSession(flags, { mustExist: true }, io);
  let outbox: Outbox | undefined;
  let metrics: MetricsServer | undefined;
  /** Abandoned deliveries still run: closing would wait for them; the process exits instead. */
  const state = { abandoned: false };
  try {
    // The lanes and topics are checked before anything is printed, as runRelay checks them:
    // `--lane mial` is refused (exit 1) without a "relay running" line before it.
    const lanes = servedLanes(
      session.loaded.config,
      'runRelay',
      flags.allLanes ? null : flags.lane,
      flags.excludeLane,
      DEFAULT_LANE,
    );
    refuseTaskLanes(session.loaded.config, lanes);
    checkTopics('runRelay', 'topics', flags.topic);
    checkTopics('runRelay', 'excludeTopics', flags.excludeTopic);
    checkTenants(session.loaded.config, 'runRelay', 'tenants', flags.tenant);
    checkTenants(session.loaded.config, 'runRelay', 'excludeTenants', flags.excludeTenant);
    // The tables the relay serves: the outbox's own, or each tenant schema's.
    schemaTables(flags);
    const served = relaySchemas(session.loaded.config, flags);
    refuseWithoutSchemas(session.db.sequelize, flags.schemas);
    const prefix = flags.tablePrefix ?? 'outbox_';
    for (const tables of served?.map((s) => tableNames(prefix, s)) ?? [session.tables]) {
      const status = await schemaStatus(session.db.sequelize, tables);
      if (status.state !== 'current') {
        const what =
          status.state === 'missing'
            ? 'the outbox tables are missing'
            : `migrations ${status.pending.join(', ')} are pending`;
        const where =
          tables.schema === session.schema
            ? session.where
            : `${session.where}, tenant schema ${tables.schema}`;
        throw new ConfigurationError(
          `${where}: ${what}. Run \`npx outbox migrate${served ? ` --schemas ${served.join(',')}` : ''}\` (with the same database options) before the relay.`,
          { path: 'url' },
        );
      }
    }
    // LISTEN/NOTIFY where the database can serve it (its capabilities say), else polling.
    const wakeup = await relayWakeup(session);
    outbox = createOutbox(session.loaded.config, {
      sequelize: session.db.sequelize,
      schema: flags.schema,
      tablePrefix: flags.tablePrefix,
      preparedStatements: flags.preparedStatements,
      logger: out.logger,
      wakeup,
      taskBackend: noTaskBackend(session.loaded.config, 'relay'),
    });
    if (flags.metricsPort !== undefined) {
      // The gauges cover the schemas the relay serves (required under a schema per tenant).
      const registry = outbox.metrics(undefined, {
        schemas: flags.schemas,
        tenants: session.loaded.config.settings.tenancy === 'schema' ? flags.tenant : undefined,
      });
      metrics = await serveMetrics(registry, flags.metricsHost, flags.metricsPort).catch(
        (error: unknown) => {
          throw new ConfigurationError(
            `--metrics-port ${flags.metricsPort}: cannot listen on ${flags.metricsHost}:${flags.metricsPort} (${(error as Error)?.message ?? String(error)})`,
            { path: 'metricsPort', cause: error },
          );
        },
      );
      out.info(`metrics at ${metrics.url}`, { metrics: metrics.url });
    }
    return await runUntilStopped(outbox, session, flags, out, io, state);
  } finally {
    await metrics?.close();
    if (!state.abandoned) {
      await outbox?.close();
      await session.close();
    }
  }
}

/** Why the relay ended, beside the report. */
type Ending =
  | { readonly kind: 'report'; readonly report: RelayReport }
  | { readonly kind: 'abandoned'; readonly code: number };

async function runUntilStopped(
  outbox: Outbox,
  session: Session,
  flags: RelayFlags,
  out: CliOutput,
  io: Pick<CliIo, 'signal'>,
  state: { abandoned: boolean },
): Promise<number> {
  const workerId = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}:cli`;
  const stop = new AbortController();
  /** Set when the relay is stopped for a database error: the exit code is then 1. */
  let fatal: string | undefined;
  let abandon: (() => void) | undefined;
  const abandoned = new Promise<Ending>((resolve) => {
    abandon = () => {
      void (async () => {
        const rows = await inFlight(session, session.tables, workerId);
        const named = rows.map((r) => `#${r.id} ${r.receiverKey}`).join(', ');
        const handedBack = rows.length > 0 ? await handBackInFlight(outbox, workerId, rows) : 0;
        const lapse = rows
          .map((r) => r.leaseUntil.toISOString())
          .sort()
          .at(-1);
        out.error(
          rows.length === 0
            ? 'shutdown timeout: the relay had not finished; exiting'
            : handedBack === undefined
              ? `shutdown timeout: abandoning ${rows.length} deliveries in flight (${named}); they could not be handed back, so their leases hand them back to the next relay after ${lapse}`
              : `shutdown timeout: handed back ${handedBack} of ${rows.length} deliveries in flight (${named}); the next relay can take them at once (an unfinished attempt is not charged)`,
          { abandoned: rows.map((r) => ({ id: r.id, receiverKey: r.receiverKey })), handedBack },
        );
        resolve({ kind: 'abandoned', code: EXIT.abandoned });
      })();
    };
  });
  let shutdownTimer: NodeJS.Timeout | undefined;
  const onSignal = (signal: string) => {
    if (stop.signal.aborted) {
      out.warn(`${signal} again: not waiting for the deliveries in hand`);
      abandon?.();
      return;
    }
    out.info(
      `stopping (${signal}) — finishing the deliveries in hand (at most ${flags.shutdownTimeout} ms), handing the rest back`,
    );
    stop.abort();
    shutdownTimer = setTimeout(() => abandon?.(), flags.shutdownTimeout);
  };
  // A database error that is not transient (a permission, a dropped table) is not retried
  // as if it were: the relay stops and says why. With --once, transient ones are retried
  // for --connect-timeout at most.
  let failingSince: number | undefined;
  const offError = outbox.on('relay:error', ({ error }) => {
    if (stop.signal.aborted) return;
    const message = (error as Error)?.message ?? String(error);
    if (!isTransientDatabaseError(error)) {
      fatal = `a database error that is not transient: ${message}`;
      stop.abort();
    } else if (flags.once) {
      failingSince ??= Date.now();
      if (Date.now() - failingSince >= flags.connectTimeout) {
        fatal = `the database kept failing for ${flags.connectTimeout} ms (--connect-timeout): ${message}`;
        stop.abort();
      }
    }
  });
  const progress = () => {
    failingSince = undefined;
  };
  const offs = [
    offError,
    outbox.on('relay:delivered', progress),
    outbox.on('relay:failed', progress),
    outbox.on('relay:deadLettered', progress),
  ];
  const offStop = onStopRequest(io, onSignal);
  try {
    const lane = flags.allLanes ? 'every lane' : `lane ${flags.lane ?? 'default'}`;
    const schemas = relaySchemas(session.loaded.config, flags);
    const tenantSchemas = schemas ? `, tenant schemas ${schemas.join(', ')}` : '';
    out.info(
      `relay running on ${session.where}${tenantSchemas} (${lane})${flags.once ? ' (once)' : ''}`,
      {
        database: session.db.label,
        source: session.db.source,
        schema: session.schema,
        workerId,
      },
    );
    const ending = await Promise.race([
      outbox
        .runRelay({
          workerId,
          untilIdle: flags.once,
          signal: stop.signal,
          batchSize: flags.batchSize,
          concurrency: flags.concurrency,
          pollIntervalMs: flags.pollInterval,
          allowUnsafeConcurrency: flags.allowUnsafeConcurrency,
          lane: flags.allLanes ? null : flags.lane,
          excludeLanes: flags.excludeLane,
          topics: flags.topic,
          excludeTopics: flags.excludeTopic,
          tenants: flags.tenant,
          excludeTenants: flags.excludeTenant,
          schemas: flags.schemas,
          summaryIntervalMs: flags.summaryInterval,
        })
        .then((report): Ending => ({ kind: 'report', report })),
      abandoned,
    ]);
    if (ending.kind === 'abandoned') {
      state.abandoned = true;
      return ending.code;
    }
    const r = ending.report;
    out.info(
      `relay stopped — succeeded ${r.succeeded}, failed ${r.failed}, dead ${r.dead}, orphaned ${r.orphaned}, handed back ${r.handedBack}`,
      { report: r },
    );
    if (fatal) {
      out.error(`the relay stopped: ${fatal}`);
      return EXIT.couldNotRun;
    }
    if (flags.once && r.failed + r.dead + r.orphaned > 0) return EXIT.needsAttention;
    return EXIT.ok;
  } finally {
    clearTimeout(shutdownTimer);
    offStop();
    for (const off of offs) off();
  }
}

/** A delivery this relay still holds when a shutdown timeout passes. */
interface InFlightRow {
  readonly id: string;
  readonly receiverKey: string;
  readonly claimedAt: Date;
  readonly leaseUntil: Date;
}

/** The deliveries this relay still holds: what a shutdown timeout hands back. */
async function inFlight(
  session: Session,
  tables: TableNames,
  workerId: string,
): Promise<InFlightRow[]> {
  try {
    const sequelize = session.db.sequelize;
    const rows = await dialectOf(sequelize).runner(sequelize).select<{
      id: string | number;
      receiver_key: string;
      claimed_at: unknown;
      lease_until: unknown;
    }>(
      `SELECT id, receiver_key, claimed_at, lease_until FROM ${tables.deliveries} WHERE status = 'claimed' AND claimed_by = $1 ORDER BY id`,
      [workerId],
    );
    return rows.map((r) => ({
      id: String(r.id),
      receiverKey: r.receiver_key,
      claimedAt: toDateOrNull(r.claimed_at) ?? new Date(0),
      leaseUntil: toDateOrNull(r.lease_until) ?? new Date(0),
    }));
  } catch {
    return [];
  }
}

/** How long a shutdown timeout waits for its hand-back before leaving rows to their leases. */
const HAND_BACK_BUDGET_MS = 2_000;

/**
 * Hand the in-flight rows back at once, claim by claim (each a compare-and-set on its
 * token, so a row whose attempt finished meanwhile is left as recorded). A handler still
 * running here is rolled back when the process exits, and its acknowledgement can no
 * longer win the compare-and-set; a transport send still running may complete, and the
 * event is then delivered again (at least once). Gives up after {@link HAND_BACK_BUDGET_MS}
 * (SQLite: a running handler holds the one write lock): the leases hand the rows back.
 * @returns how many rows were handed back, or undefined when it gave up.
 */
async function handBackInFlight(
  outbox: Outbox,
  workerId: string,
  rows: readonly InFlightRow[],
): Promise<number | undefined> {
  const store = runtimeOf(outbox).store;
  const byClaim = new Map<number, string[]>();
  for (const r of rows) {
    const ids = byClaim.get(r.claimedAt.getTime()) ?? [];
    ids.push(r.id);
    byClaim.set(r.claimedAt.getTime(), ids);
  }
  const release = (async () => {
    let n = 0;
    for (const [claimedAt, ids] of byClaim)
      n += await store.release(ids, { workerId, claimedAt: new Date(claimedAt) }, new Date());
    return n;
  })();
  let timer: NodeJS.Timeout | undefined;
  const budget = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), HAND_BACK_BUDGET_MS);
  });
  try {
    return await Promise.race([release.catch(() => undefined), budget]);
  } finally {
    clearTimeout(timer);
  }
}
