/**
 * `outbox requeue-dead [--receiver K] [--id N…] [--topic T…] [--limit N] [--json]`: give
 * dead letters their attempt budget back (pending, attempts zero, owed from now), by
 * receiver, row or topic; with no scope, every dead letter.
 */
import type { Command } from 'commander';
import { EXIT } from '../exit-codes.js';
import type { CliOutput } from '../log-format.js';
import {
  OPERATION_EXIT_HELP,
  type OperationFlags,
  printJson,
  repeatable,
  withOutbox,
} from '../operation.js';
import { connectionOptions, integer } from '../options.js';

export interface RequeueDeadFlags extends OperationFlags {
  readonly receiver?: string;
  readonly id?: readonly string[];
  readonly topic?: readonly string[];
  readonly limit?: number;
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
    .option('--limit <n>', 'at most this many rows', integer(1))
    .option('--json', 'print {"requeued": n} on stdout')
    .addHelpText(
      'after',
      `${OPERATION_EXIT_HELP('rows named with --id were not all requeued (not dead, or not there)')}

A cancelled row is never requeued (replay its event instead). The rows go in chunks of
settings.batchSize, oldest event first, each chunk its own short transaction.`,
    );
}

export async function requeueDead(flags: RequeueDeadFlags, out: CliOutput): Promise<number> {
  return withOutbox(flags, out, async (outbox, session) => {
    const requeued = await outbox.requeueDead({
      receiverKey: flags.receiver,
      deliveryIds: flags.id,
      topics: flags.topic,
      limit: flags.limit,
    });
    if (flags.json) printJson({ requeued });
    else
      out.result(
        `requeued ${requeued} dead letter${requeued === 1 ? '' : 's'} on ${session.where}`,
      );
    const named = flags.id ? new Set(flags.id).size : undefined;
    return named !== undefined && requeued < named ? EXIT.needsAttention : EXIT.ok;
  });
}
