/**
 * `outbox dead [--receiver K] [--limit N] [--json] [--fail-if-any]`: the dead letters, newest
 * first, with their errors — what to read before `outbox requeue-dead --id …` or `outbox
 * replay`. Listing exits 0 whatever it lists (a `set -e` script reads the list); probing is
 * `--fail-if-any` (exit 2 when there are any), or `outbox health --max-dead 0`.
 */
import type { Command } from 'commander';
import { DEFAULT_DEAD_LETTERS_LIMIT, type DeadLetter } from '../../src/ops/dead-letters.js';
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
import { checkReceiverFlag } from '../receiver-option.js';

export interface DeadFlags extends OperationFlags {
  readonly receiver?: string;
  /** `--tenant`: only this tenant's rows (`settings.tenancy: 'column'`). */
  readonly tenant?: string;
  /** `--column name=value` (repeatable): only events whose columns hold these values. */
  readonly column?: readonly string[];
  readonly limit?: number;
  /** `--fail-if-any`: exit 2 when any dead letter is listed (a probe). */
  readonly failIfAny?: boolean;
}

/** Declare the command's options on `command`. */
export function deadCommand(command: Command): Command {
  return connectionOptions(
    command.description('list dead-lettered deliveries, newest first, with their errors'),
  )
    .option('--receiver <key>', "only this receiver's dead letters")
    .option('--tenant <name>', "only this tenant's dead letters (settings.tenancy: 'column')")
    .option('--column <name=value>', COLUMN_FLAG_HELP, repeatable)
    .option(
      '--limit <n>',
      `at most this many (default ${DEFAULT_DEAD_LETTERS_LIMIT})`,
      integer(1, 100_000),
    )
    .option('--json', 'print the list as JSON (an array) on stdout')
    .option(
      '--fail-if-any',
      'exit 2 when there is any dead letter (a probe; listing alone exits 0)',
    )
    .addHelpText(
      'after',
      `${OPERATION_EXIT_HELP('with --fail-if-any: there are dead letters (someone should read them)')}

Listing exits 0, whatever it lists, so a \`set -e\` script can read \`outbox dead --json\`.
To probe, add --fail-if-any, or run \`npx outbox health --max-dead 0\` (exit 2 when any).

Then:
  npx outbox requeue-dead --id 42 --id 43     # give those rows their attempts back
  npx outbox requeue-dead --receiver billing.charge
  npx outbox replay <event-id>                # run an event's receivers again`,
    );
}

export async function dead(flags: DeadFlags, out: CliOutput, io: CliIo): Promise<number> {
  return withOutbox(flags, out, io, async (outbox, session) => {
    checkReceiverFlag(session.loaded.config, flags.receiver);
    const letters = await outbox.deadLetters({
      receiverKey: flags.receiver,
      limit: flags.limit,
      tenant: flags.tenant,
      columns: columnsFlag(session.loaded.config, flags.column),
    });
    if (flags.json) printJson(io.stdout, letters);
    else if (letters.length === 0) out.result(`no dead letters on ${session.where}`);
    else {
      out.result(
        `${letters.length} dead letter${letters.length === 1 ? '' : 's'} on ${session.where}, newest first:`,
      );
      for (const letter of letters) io.stdout.write(`${describeLetter(letter)}\n`);
    }
    return flags.failIfAny && letters.length > 0 ? EXIT.needsAttention : EXIT.ok;
  });
}

/** One dead letter as two lines: where it is, and why it died. */
export function describeLetter(d: DeadLetter): string {
  const target = d.target ? ` → ${d.target}` : '';
  const at = d.deadAt ? d.deadAt.toISOString() : 'unknown time';
  const error = (d.lastError ?? '(no error recorded)').split('\n')[0];
  const shown = error.length > 200 ? `${error.slice(0, 200)}…` : error;
  return `  #${d.deliveryId} ${d.receiverKey}${target}  ${d.eventName} ${d.eventId}  attempts ${d.attempts}/${d.maxAttempts}  dead at ${at}\n      ${shown}`;
}
