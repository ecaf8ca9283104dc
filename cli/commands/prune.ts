/**
 * `outbox prune`: delete the events that are due (`outbox.pruneEvents()`), batch by batch,
 * or with `--dry-run` count them and delete nothing. Its progress on stderr
 * (cli/progress.ts): a bar over the events a dry run counts first on a TTY, one line per
 * batch when not a TTY (a batch is a transaction, so each line is a fact, not an
 * estimate), a JSON line per batch with `--json`; the result on stdout, as JSON with
 * `--json`. SIGTERM / SIGINT stop it between batches: what was deleted stays deleted, the
 * rest waits for the next run.
 *
 * Exit codes (exit-codes.ts): 0 pruned (or counted), 1 could not run (no database, bad
 * config, tables missing or behind, a bad option).
 */
import { type Command, InvalidArgumentError } from 'commander';
import { ConfigurationError } from '../../src/errors/outbox-error.js';
import type { PruneBatch } from '../../src/ops/prune.js';
import { createOutbox, type Outbox } from '../../src/outbox.js';
import { COLUMN_FLAG_HELP, columnsFlag } from '../column-option.js';
import { EXIT } from '../exit-codes.js';
import { type CliIo, onStopRequest } from '../io.js';
import type { CliOutput } from '../log-format.js';
import { operationTables, repeatable } from '../operation.js';
import { type ConnectionFlags, connectionOptions, integer } from '../options.js';
import { progressForm, startProgress } from '../progress.js';
import { schemaStatus } from '../schema-status.js';
import { openSession } from '../session.js';
import { noTaskBackend } from '../task-backend.js';

export interface PruneFlags extends ConnectionFlags {
  /** `--older-than 7d`, in seconds. */
  readonly olderThan?: number;
  readonly dryRun?: boolean;
  readonly json?: boolean;
  readonly batchSize?: number;
  /** `--tenant`: only this tenant's rows (`settings.tenancy: 'column'`). */
  readonly tenant?: string;
  /** `--column name=value` (repeatable): only events whose columns hold these values. */
  readonly column?: readonly string[];

  readonly limit?: number;
}

const UNIT_SECONDS: Record<string, number> = { d: 86_400, h: 3_600, m: 60, s: 1 };

/**
 * Parse a window such as `7d`, `36h`, `90m` or `30s` (days, hours, minutes, seconds) into
 * seconds; a bare number is refused, because a window read in the wrong unit is wrong by a
 * factor of 24 or 60.
 */
export function parseWindow(value: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([dhms])\s*$/i.exec(value);
  if (!m) {
    throw new InvalidArgumentError(
      'expected a number and a unit: 7d (days), 36h (hours), 90m (minutes) or 30s (seconds).',
    );
  }
  return Number(m[1]) * UNIT_SECONDS[m[2]!.toLowerCase()]!;
}

/** Declare the command's options on `command`. */
export function pruneCommand(command: Command): Command {
  return connectionOptions(
    command.description(
      'delete the events that are due (consumed, past their own window, or past --older-than), batch by batch',
    ),
  )
    .option(
      '--older-than <window>',
      "the ordinary window, e.g. 7d or 36h (default: the config's settings.retentionDays); an event with a window of its own keeps it",
      parseWindow,
    )
    .option('--dry-run', 'count the events that are due and delete nothing')
    .option('--json', 'print the result as one JSON object (and each batch as a JSON line)')
    .option(
      '--batch-size <rows>',
      'rows per batch, delivery rows and event rows together (default: settings.pruneBatchRows)',
      integer(1, 100_000),
    )
    .option('--limit <events>', 'delete at most this many events', integer(1))
    .option('--tenant <name>', "only this tenant's events (settings.tenancy: 'column')")
    .option('--column <name=value>', COLUMN_FLAG_HELP, repeatable)
    .addHelpText(
      'after',
      `
Due: an event recorded with retention "succeeded" once every delivery succeeded or was
cancelled, "settled" once every delivery is terminal; an event with a window of its own
past it; any other event past --older-than. Never one with a delivery still pending,
failed or claimed. A running relay also prunes when idle (settings.relayPrune).

Exit codes: 0 pruned (or, with --dry-run, counted), 1 could not run (no database, bad
config, tables missing or behind, a bad option).

  npx outbox prune --dry-run --older-than 30d
  npx outbox prune --older-than 7d --json`,
    );
}

/**
 * Run `outbox prune`. `io.stderr` is where the progress goes (a bar when it is a TTY: a
 * test hands a fake one); the result goes to `io.stdout`; `io.signal` (else SIGTERM /
 * SIGINT) stops it between batches.
 */
export async function prune(flags: PruneFlags, out: CliOutput, io: CliIo): Promise<number> {
  const session = await openSession(flags, { mustExist: true }, io);
  let outbox: Outbox | undefined;
  const stop = new AbortController();
  const offStop = onStopRequest(io, () => stop.abort(), { once: true });
  try {
    const status = await schemaStatus(session.db.sequelize, operationTables(session, flags));
    if (status.state !== 'current') {
      const what =
        status.state === 'missing'
          ? 'the outbox tables are missing'
          : `migrations ${status.pending.join(', ')} are pending`;
      throw new ConfigurationError(
        `${session.where}: ${what}. Run \`npx outbox migrate\` (with the same database options) first.`,
        { path: 'url' },
      );
    }
    outbox = createOutbox(session.loaded.config, {
      sequelize: session.db.sequelize,
      schema: flags.schema,
      tablePrefix: flags.tablePrefix,
      preparedStatements: flags.preparedStatements,
      logger: out.logger,
      wakeup: null,
      taskBackend: noTaskBackend(session.loaded.config, 'prune'),
    });
    const olderThan = flags.olderThan === undefined ? undefined : { seconds: flags.olderThan };
    const columns = columnsFlag(session.loaded.config, flags.column);
    const started = performance.now();
    let batches = 0;
    let deliveries = 0;
    const form = flags.dryRun ? 'lines' : progressForm(out, flags.json, io.stderr);
    // The bar's total: what a dry run counts now (one count, served by the prune's indexes).
    const total =
      form === 'bar'
        ? await outbox.pruneEvents({
            olderThan,
            dryRun: true,
            limit: flags.limit,
            tenant: flags.tenant,
            columns,
          })
        : 0;
    const progress = await startProgress(out, {
      form,
      label: 'prune',
      unit: 'events',
      total,
      stream: io.stderr,
    });
    let events: number;
    try {
      events = await outbox.pruneEvents({
        olderThan,
        tenant: flags.tenant,
        columns,
        dryRun: flags.dryRun,
        batchSize: flags.batchSize,
        limit: flags.limit,
        signal: stop.signal,
        onBatch: (b: PruneBatch) => {
          batches += 1;
          deliveries = b.totalDeliveries;
          progress.batch(
            b.totalEvents,
            `batch ${batches}: ${b.events} events, ${b.deliveries} delivery rows (${b.totalEvents} events so far)`,
            { batch: batches, ...b },
          );
        },
      });
    } finally {
      progress.stop();
    }
    const seconds = Math.round((performance.now() - started) / 10) / 100;
    const result = {
      dryRun: Boolean(flags.dryRun),
      events,
      deliveries,
      batches,
      stopped: stop.signal.aborted,
      seconds,
    };
    if (flags.json) io.stdout.write(`${JSON.stringify(result)}\n`);
    else if (flags.dryRun)
      out.result(`${events} events are due in ${session.where} (nothing deleted)`);
    else
      out.result(
        `pruned ${events} events and ${deliveries} delivery rows in ${batches} batches, ${seconds}s${stop.signal.aborted ? ' (stopped)' : ''}`,
      );
    return EXIT.ok;
  } finally {
    offStop();
    await outbox?.close();
    await session.close();
  }
}
