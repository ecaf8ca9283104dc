/**
 * `outbox cancel <event-id…> [--receiver K] [--json]`: withdraw the owed deliveries of
 * events so they never run; claimed ones are left to their worker and counted.
 */
import type { Command } from 'commander';
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
import { connectionOptions } from '../options.js';
import { checkReceiverFlag } from '../receiver-option.js';

export interface CancelFlags extends OperationFlags {
  readonly receiver?: string;
  /** `--tenant`: only this tenant's rows (`settings.tenancy: 'column'`). */
  readonly tenant?: string;
  /** `--column name=value` (repeatable): only events whose columns hold these values. */
  readonly column?: readonly string[];
}

/** Declare the command's arguments and options on `command`. */
export function cancelCommand(command: Command): Command {
  return connectionOptions(
    command
      .description('withdraw the owed (pending or failed) deliveries of events, so they never run')
      .argument('<event-id...>', "the events' ids (UUIDs)"),
  )
    .option('--receiver <key>', "only this receiver's deliveries")
    .option(
      '--tenant <name>',
      "only this tenant's events; another's are reported missing (settings.tenancy: 'column')",
    )
    .option('--column <name=value>', COLUMN_FLAG_HELP, repeatable)
    .option('--json', 'print {"cancelled", "inFlight", "missing"} on stdout')
    .addHelpText(
      'after',
      `${OPERATION_EXIT_HELP('deliveries in flight (claimed) could not be stopped, or some event ids named no event')}

Settled deliveries (succeeded, dead, orphaned, cancelled) keep their outcome.`,
    );
}

export async function cancel(
  eventIds: readonly string[],
  flags: CancelFlags,
  out: CliOutput,
  io: CliIo,
): Promise<number> {
  return withOutbox(flags, out, io, async (outbox, session) => {
    checkReceiverFlag(session.loaded.config, flags.receiver);
    const result = await outbox.cancelDeliveries(eventIds, {
      receiverKey: flags.receiver,
      tenant: flags.tenant,
      columns: columnsFlag(session.loaded.config, flags.column),
    });
    if (flags.json) printJson(io.stdout, result);
    else {
      out.result(
        `cancelled ${result.cancelled} on ${session.where}${result.inFlight > 0 ? `; ${result.inFlight} in flight, left to finish` : ''}`,
      );
      if (result.missing.length > 0)
        out.warn(`no such event (never fired, or pruned): ${result.missing.join(', ')}`);
    }
    return result.inFlight > 0 || result.missing.length > 0 ? EXIT.needsAttention : EXIT.ok;
  });
}
