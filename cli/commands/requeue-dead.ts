/**
 * `outbox requeue-dead [--receiver K] [--id N…] [--topic T…] [--limit N] [--json]`: give
 * dead letters their attempt budget back (pending, attempts zero, owed from now), by
 * receiver, row or topic; with no scope, every dead letter — and that only when asked for:
 * `--all`, or a yes at the terminal's prompt. Off a terminal a bare `requeue-dead` is
 * refused (exit 1), so a script never requeues everything by leaving a filter out.
 */
import type { Command } from 'commander';
import { ValidationError } from '../../src/errors/outbox-error.js';
import { COLUMN_FLAG_HELP, columnsFlag } from '../column-option.js';
import { EXIT } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import type { CliOutput } from '../log-format.js';
import {
  OPERATION_EXIT_HELP,
  type OperationFlags,
  printJson,
  repeatable,
  withOutbox,
} from '../operation.js';
import { connectionOptions, integer } from '../options.js';
import { progressForm, startProgress } from '../progress.js';
import { checkReceiverFlag } from '../receiver-option.js';

export interface RequeueDeadFlags extends OperationFlags {
  readonly receiver?: string;
  readonly id?: readonly string[];
  readonly topic?: readonly string[];
  /** `--tenant`: only this tenant's rows (`settings.tenancy: 'column'`). */
  readonly tenant?: string;
  /** `--column name=value` (repeatable): only events whose columns hold these values. */
  readonly column?: readonly string[];
  readonly limit?: number;
  /** `--all`: requeue every dead letter without asking. */
  readonly all?: boolean;
}

/** Collect a repeatable delivery id, checked as one. */
const ids = (value: string, previous: readonly string[] | undefined): string[] => [
  ...(previous ?? []),
  String(integer(1)(value)),
];

/** Declare the command's options on `command`. */
export function requeueDeadCommand(command: Command): Command {
  return connectionOptions(
    command.description(
      'give dead-lettered deliveries their attempts back: pending, attempts 0, owed from now',
    ),
  )
    .option('--receiver <key>', "only this receiver's dead letters")
    .option('--id <delivery-id>', 'only this row, as `outbox dead` lists it (repeatable)', ids)
    .option(
      '--topic <topic>',
      'only events of this topic: a name or a prefix pattern such as "library.*" (repeatable)',
      repeatable,
    )
    .option('--tenant <name>', "only this tenant's dead letters (settings.tenancy: 'column')")
    .option('--column <name=value>', COLUMN_FLAG_HELP, repeatable)
    .option('--limit <n>', 'at most this many rows', integer(1))
    .option(
      '--all',
      'with no --receiver/--id/--topic/--limit: requeue every dead letter, without asking',
    )
    .option('--json', 'print {"requeued": n} on stdout (and each chunk as a JSON line on stderr)')
    .addHelpText(
      'after',
      `${OPERATION_EXIT_HELP('rows named with --id were not all requeued (not dead, or not there)')}

With no --receiver, --id, --topic or --limit it would requeue every dead letter: on a
terminal it asks first (the count, [y/N]); off one (a script, CI) it is refused, exit 1,
unless --all says so.

A cancelled row is never requeued (replay its event instead). The rows go in chunks of
settings.batchSize, oldest event first, each chunk its own short transaction: a progress
bar on a TTY, one line per chunk otherwise. A relay idle on its poll is woken when each
chunk commits (on PostgreSQL, through the LISTEN/NOTIFY channel \`outbox relay\` listens on).`,
    );
}

/**
 * Run `outbox requeue-dead`. `io.stderr` is where the progress goes (a bar when it is a
 * TTY: a test hands a fake one); the result goes to `io.stdout`.
 */
export async function requeueDead(
  flags: RequeueDeadFlags,
  out: CliOutput,
  io: CliIo,
): Promise<number> {
  return withOutbox(
    flags,
    out,
    io,
    async (outbox, session) => {
      checkReceiverFlag(session.loaded.config, flags.receiver);
      const scope = {
        receiverKey: flags.receiver,
        deliveryIds: flags.id,
        topics: flags.topic,
        tenant: flags.tenant,
        columns: columnsFlag(session.loaded.config, flags.column),
        limit: flags.limit,
      };
      const unscoped =
        flags.receiver === undefined &&
        flags.id === undefined &&
        flags.topic === undefined &&
        flags.tenant === undefined &&
        flags.column === undefined &&
        flags.limit === undefined;
      if (unscoped && !flags.all) {
        if (io.stdin.isTTY !== true) {
          throw new ValidationError(
            'requeue-dead with no --receiver, --id, --topic, --tenant, --column or --limit requeues every dead letter: pass --all to mean it (on a terminal it asks), or name what to requeue (`npx outbox dead` lists them)',
            { path: 'all' },
          );
        }
        const count = await outbox.requeueDead({ ...scope, dryRun: true });
        if (count > 0) {
          const yes = await io.confirm(
            `requeue all ${count} dead letter${count === 1 ? '' : 's'} on ${session.where}? [y/N]`,
          );
          if (!yes) {
            out.warn('nothing requeued (not confirmed)');
            return EXIT.couldNotRun;
          }
        }
      }
      const form = progressForm(out, flags.json, io.stderr);
      // The bar's total: the dead rows in scope now (at most --limit).
      const total = form === 'bar' ? await outbox.requeueDead({ ...scope, dryRun: true }) : 0;
      const progress = await startProgress(out, {
        form,
        label: 'requeue-dead',
        unit: 'dead letters',
        total,
        stream: io.stderr,
      });
      let chunks = 0;
      let requeued: number;
      try {
        requeued = await outbox.requeueDead({
          ...scope,
          onBatch: (b) => {
            chunks += 1;
            progress.batch(
              b.totalRequeued,
              `chunk ${chunks}: requeued ${b.requeued} (${b.totalRequeued} so far)`,
              { chunk: chunks, ...b },
            );
          },
        });
      } finally {
        progress.stop();
      }
      if (flags.json) printJson(io.stdout, { requeued });
      else
        out.result(
          `requeued ${requeued} dead letter${requeued === 1 ? '' : 's'} on ${session.where}`,
        );
      const named = flags.id ? new Set(flags.id).size : undefined;
      return named !== undefined && requeued < named ? EXIT.needsAttention : EXIT.ok;
    },
    { wakeRelays: true },
  );
}
