/**
 * `outbox health`: how far behind the outbox is (`outbox.health()`), as a short table for
 * people or JSON for machines, and an exit code a liveness or alert probe can act on: 0
 * within the thresholds given, 2 past one of them, 1 when it could not read at all. With
 * no threshold it always exits 0 once it has read the health: a probe states what "too far
 * behind" means for its own receivers.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { ConfigurationError } from '../../src/errors/outbox-error.js';
import type { OutboxHealth } from '../../src/ops/health.js';
import {
  HELD_BACK_COUNT_CAP,
  type HoldingDeadLetter,
  readHoldingDeadLetters,
} from '../../src/ops/held-back.js';
import { createOutbox, type Outbox } from '../../src/outbox.js';
import { findDialect } from '../../src/storage/dialects.js';
import { COLUMN_FLAG_HELP, columnsFlag } from '../column-option.js';
import { EXIT } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import type { CliOutput } from '../log-format.js';
import { operationTables, repeatable } from '../operation.js';
import { type ConnectionFlags, connectionOptions, integer } from '../options.js';
import { schemaStatus } from '../schema-status.js';
import { openSession } from '../session.js';
import { noTaskBackend } from '../task-backend.js';

export interface HealthFlags extends ConnectionFlags {
  readonly json?: boolean;
  /** `--tenant`: only this tenant's rows (`settings.tenancy: 'column'`). */
  readonly tenant?: string;
  /** `--column name=value` (repeatable): only the rows of events whose columns hold these values. */
  readonly column?: readonly string[];

  readonly maxOwed?: number;
  /** `--max-oldest-age`, in milliseconds. */
  readonly maxOldestAge?: number;
  readonly maxDead?: number;
  readonly maxLapsed?: number;
}

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/**
 * Parse a CLI duration (`90s`, `5m`, `1h30m`, `7d`, `250ms`) to milliseconds. A bare number
 * is refused: a unit read wrong is wrong by a factor of sixty or a thousand.
 */
export function parseDurationMs(value: string): number {
  const text = value.trim();
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  let total = 0;
  let at = 0;
  for (let m = part.exec(text); m; m = part.exec(text)) {
    total += Number(m[1]) * UNIT_MS[m[2]];
    at = part.lastIndex;
  }
  if (text === '' || at !== text.length) {
    throw new InvalidArgumentError(
      'expected a duration with its unit, such as 90s, 5m, 1h30m or 7d (ms, s, m, h, d).',
    );
  }
  return total;
}

/** Declare the command's options on `command`. */
export function healthCommand(command: Command): Command {
  return connectionOptions(
    command.description(
      'how far behind the outbox is: owed, oldest owed, claimed, lapsed leases, scheduled, dead, per receiver; exit 2 past a threshold',
    ),
  )
    .option('--json', 'print the health as one JSON object (for machines)')
    .option('--tenant <name>', "only this tenant's rows (settings.tenancy: 'column')")
    .option('--column <name=value>', COLUMN_FLAG_HELP, repeatable)
    .option('--max-owed <n>', 'exit 2 when more deliveries than this are owed', integer(0))
    .option(
      '--max-oldest-age <duration>',
      'exit 2 when the oldest owed delivery has been owed longer than this (90s, 5m, 1h, 7d)',
      parseDurationMs,
    )
    .option('--max-dead <n>', 'exit 2 when more deliveries than this are dead', integer(0))
    .option(
      '--max-lapsed <n>',
      'exit 2 when more claimed deliveries than this have an expired lease',
      integer(0),
    )
    .addHelpText(
      'after',
      `
What it reads:
  owed       deliveries pending, failed or claimed whose due time has come (a row in its
             retry backoff is owed; one declared due later is scheduled, not owed)
  oldest     when the oldest owed delivery became owed: its due time, else its event's
             record time (never its next retry time, so the age only rises while work waits)
  claimed    owed deliveries a relay holds now; lapsed: claimed ones whose lease expired
  scheduled  deliveries waiting for a due time still ahead
  dead       dead letters (each holds back the later events of its ordering key); those
             with owed rows behind them are named (delivery id, receiver, ordering key),
             in --json as heldBackBy
  Receivers are listed only with something owed, dead or scheduled, worst backlog first.

As a probe:
  outbox health --max-oldest-age 5m --max-dead 0 --max-lapsed 10
  exits 2 (and names each threshold passed on stderr) when the outbox is past one.

Exit codes:
  0  read, and within every threshold given (always, when none is given)
  1  could not run: no or bad config, no database, unreachable within --connect-timeout,
     outbox tables missing (run \`npx outbox migrate\`), a bad option
  2  read, and past at least one threshold`,
    );
}

/** One threshold passed. */
export interface Breach {
  readonly threshold: '--max-owed' | '--max-oldest-age' | '--max-dead' | '--max-lapsed';
  readonly value: number;
  readonly max: number;
}

/** The thresholds `health` is past, in the order of its options. */
export function breaches(health: OutboxHealth, flags: HealthFlags): Breach[] {
  const found: Breach[] = [];
  const check = (threshold: Breach['threshold'], value: number, max: number | undefined) => {
    if (max !== undefined && value > max) found.push({ threshold, value, max });
  };
  check('--max-owed', health.owed, flags.maxOwed);
  check('--max-oldest-age', oldestAgeMs(health), flags.maxOldestAge);
  check('--max-dead', health.dead, flags.maxDead);
  check('--max-lapsed', health.lapsedLeases, flags.maxLapsed);
  return found;
}

/** How long the oldest owed delivery has been owed, in milliseconds; 0 when none is. */
function oldestAgeMs(health: OutboxHealth): number {
  return health.oldestOwedAt ? Math.max(0, health.at.getTime() - health.oldestOwedAt.getTime()) : 0;
}

export async function health(flags: HealthFlags, out: CliOutput, io: CliIo): Promise<number> {
  const session = await openSession(flags, { mustExist: true }, io);
  let outbox: Outbox | undefined;
  try {
    const status = await schemaStatus(session.db.sequelize, operationTables(session, flags));
    if (status.state === 'missing') {
      throw new ConfigurationError(
        `${session.where}: the outbox tables are missing. Run \`npx outbox migrate\` (with the same database options) first.`,
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
      taskBackend: noTaskBackend(session.loaded.config, 'health'),
    });
    const columns = columnsFlag(session.loaded.config, flags.column);
    const read = await outbox.health({
      ...(flags.tenant === undefined ? {} : { tenant: flags.tenant }),
      ...(columns === undefined ? {} : { columns }),
    });
    // The dead letters that hold owed rows of their ordering key back (only read when
    // there are dead letters): what explains an owed row that only grows older.
    const entry = findDialect(session.db.sequelize.getDialect());
    // A read that fails (a schema behind, say) leaves the names out, with a warning: the
    // health itself was read and its thresholds still decide the exit code.
    const holding =
      read.dead > 0 && entry
        ? await readHoldingDeadLetters(session.db.sequelize, session.tables, entry).catch(
            (error: unknown) => {
              out.warn(
                `could not read which dead letters hold rows back: ${(error as Error)?.message ?? String(error)}`,
              );
              return [];
            },
          )
        : [];
    const past = breaches(read, flags);
    if (flags.json) io.stdout.write(`${JSON.stringify(asJson(read, past, holding), null, 2)}\n`);
    else io.stdout.write(table(read) + heldBackLines(holding));
    for (const b of past) {
      out.error(
        b.threshold === '--max-oldest-age'
          ? `past ${b.threshold}: the oldest owed delivery has been owed ${age(b.value)} (max ${age(b.max)})`
          : `past ${b.threshold}: ${b.value} (max ${b.max})`,
        { threshold: b.threshold, value: b.value, max: b.max },
      );
    }
    return past.length > 0 ? EXIT.needsAttention : EXIT.ok;
  } finally {
    await outbox?.close();
    await session.close();
  }
}

/** The JSON a machine reads: the health, the oldest age in seconds, and what was passed. */
function asJson(h: OutboxHealth, past: readonly Breach[], holding: readonly HoldingDeadLetter[]) {
  return {
    at: h.at.toISOString(),
    owed: h.owed,
    oldestOwedAt: h.oldestOwedAt?.toISOString() ?? null,
    oldestOwedAgeSeconds: oldestAgeMs(h) / 1000,
    claimed: h.claimed,
    lapsedLeases: h.lapsedLeases,
    scheduled: h.scheduled,
    dead: h.dead,
    receivers: h.receivers.map((r) => ({
      receiverKey: r.receiverKey,
      owed: r.owed,
      oldestOwedAt: r.oldestOwedAt?.toISOString() ?? null,
      claimed: r.claimed,
      scheduled: r.scheduled,
      dead: r.dead,
    })),
    heldBackBy: holding,
    ok: past.length === 0,
    breaches: past.map((b) => ({
      threshold: b.threshold,
      value: b.threshold === '--max-oldest-age' ? b.value / 1000 : b.value,
      max: b.threshold === '--max-oldest-age' ? b.max / 1000 : b.max,
    })),
  };
}

/** The dead letters holding rows back, for people: one line each, and what to do. */
function heldBackLines(holding: readonly HoldingDeadLetter[]): string {
  if (holding.length === 0) return '';
  const lines = [
    '',
    'held back by dead letters (a later row of the same ordering key waits for each):',
  ];
  for (const d of holding) {
    const target = d.target ? ` → ${d.target}` : '';
    const count = d.heldBack >= HELD_BACK_COUNT_CAP ? `${d.heldBack}+` : String(d.heldBack);
    lines.push(
      `  #${d.deliveryId} ${d.receiverKey}${target}  ordering key ${JSON.stringify(d.orderingKey)}  event ${d.eventId}  holds back ${count}`,
    );
  }
  lines.push(
    '  requeue it (`npx outbox requeue-dead --id N`) to let its key move; until then the rows behind it wait',
  );
  return `${lines.join('\n')}\n`;
}

/** `4m 12s`, `2h 5m`, `3d 4h`: an age for people. */
export function age(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** The health for people: one summary line, then a table of the receivers behind. */
function table(h: OutboxHealth): string {
  const oldest = h.oldestOwedAt
    ? `${age(h.at.getTime() - h.oldestOwedAt.getTime())} (since ${h.oldestOwedAt.toISOString()})`
    : '-';
  const lines = [
    `owed ${h.owed}, oldest owed ${oldest}, claimed ${h.claimed}, lapsed leases ${h.lapsedLeases}, scheduled ${h.scheduled}, dead ${h.dead}`,
  ];
  if (h.receivers.length === 0) {
    lines.push('no receiver has anything owed, scheduled or dead');
    return `${lines.join('\n')}\n`;
  }
  const rows = [
    ['receiver', 'owed', 'oldest owed', 'claimed', 'scheduled', 'dead'],
    ...h.receivers.map((r) => [
      r.receiverKey,
      String(r.owed),
      r.oldestOwedAt ? age(h.at.getTime() - r.oldestOwedAt.getTime()) : '-',
      String(r.claimed),
      String(r.scheduled),
      String(r.dead),
    ]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  lines.push('');
  for (const row of rows) {
    lines.push(
      row
        .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i])))
        .join('  ')
        .trimEnd(),
    );
  }
  return `${lines.join('\n')}\n`;
}
