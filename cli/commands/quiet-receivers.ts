/**
 * `outbox quiet-receivers [--within 1d] [--json]`: the durable receivers that have
 * succeeded at nothing inside the window (`outbox.quietReceivers()`), never-run ones
 * first — a receiver whose upstream stopped firing, or that a deploy unhooked, is as
 * broken as one that fails, and says nothing. Exit 2 when any is quiet, so it serves as an
 * alert probe.
 */
import type { Command } from 'commander';
import type { QuietReceiver } from '../../src/ops/quiet-receivers.js';
import { EXIT } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import type { CliOutput } from '../log-format.js';
import { OPERATION_EXIT_HELP, type OperationFlags, printJson, withOutbox } from '../operation.js';
import { connectionOptions } from '../options.js';
import { age, parseDurationMs } from './health.js';

export interface QuietReceiversFlags extends OperationFlags {
  /** `--within 1d`, in milliseconds. */
  readonly within?: number;
}

/** Declare the command's options on `command`. */
export function quietReceiversCommand(command: Command): Command {
  return connectionOptions(
    command.description(
      'list the durable receivers with no success inside a window (never-run ones first); exit 2 when any is quiet',
    ),
  )
    .option(
      '--within <duration>',
      "how long a receiver may go without a success: 90m, 12h, 1d, 7d (default: the config's settings.retentionDays)",
      parseDurationMs,
    )
    .option('--json', 'print {"quiet": [...]} as JSON on stdout (for machines)')
    .addHelpText(
      'after',
      `${OPERATION_EXIT_HELP('at least one receiver is quiet (listed)')}

Read from the delivery rows and from the last-success table the prune keeps, so a
receiver whose rows were pruned is still known to have run; one declared in the config
that never received anything is listed as never. Only durable receivers keep rows, so
only they are listed.

As a probe:
  npx outbox quiet-receivers --within 1d     # exits 2 when a receiver was quiet all day`,
    );
}

export async function quietReceivers(
  flags: QuietReceiversFlags,
  out: CliOutput,
  io: CliIo,
): Promise<number> {
  return withOutbox(flags, out, io, async (outbox, session) => {
    const at = new Date();
    const quiet = await outbox.quietReceivers({
      now: at,
      within: flags.within === undefined ? undefined : { milliseconds: flags.within },
    });
    if (flags.json) {
      printJson(io.stdout, {
        at: at.toISOString(),
        withinSeconds: flags.within === undefined ? null : flags.within / 1000,
        quiet: quiet.map((q) => ({
          receiverKey: q.receiverKey,
          event: q.event ?? null,
          lastSucceededAt: q.lastSucceededAt?.toISOString() ?? null,
        })),
        ok: quiet.length === 0,
      });
    } else if (quiet.length === 0) {
      out.result(`no receiver is quiet${windowText(flags)} on ${session.where}`);
    } else {
      out.result(
        `${quiet.length} receiver${quiet.length === 1 ? ' is' : 's are'} quiet${windowText(flags)} on ${session.where}:`,
      );
      io.stdout.write(table(quiet, at));
    }
    return quiet.length > 0 ? EXIT.needsAttention : EXIT.ok;
  });
}

const windowText = (flags: QuietReceiversFlags) =>
  flags.within === undefined ? '' : ` within ${age(flags.within)}`;

/** The quiet receivers for people: key, event, and when each last succeeded. */
function table(quiet: readonly QuietReceiver[], at: Date): string {
  const rows = [
    ['receiver', 'event', 'last succeeded'],
    ...quiet.map((q) => [
      q.receiverKey,
      q.event ?? '(any)',
      q.lastSucceededAt
        ? `${age(at.getTime() - q.lastSucceededAt.getTime())} ago (${q.lastSucceededAt.toISOString()})`
        : 'never',
    ]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  return `${rows.map((row) => `  ${row.map((cell, i) => cell.padEnd(widths[i])).join('  ')}`.trimEnd()).join('\n')}\n`;
}
