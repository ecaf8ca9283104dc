/**
 * `outbox replay <event-id…> [--receiver K…] [--json]`: make events owed again — settled
 * rows reopened, receivers without a row added, both owed from now.
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

export interface ReplayFlags extends OperationFlags {
  readonly receiver?: readonly string[];
  /** `--tenant`: only this tenant's rows (`settings.tenancy: 'column'`). */
  readonly tenant?: string;
  /** `--column name=value` (repeatable): only events whose columns hold these values. */
  readonly column?: readonly string[];
}

/** Declare the command's arguments and options on `command`. */
export function replayCommand(command: Command): Command {
  return connectionOptions(
    command
      .description(
        'make events owed again: settled deliveries reopened, receivers without one added (both owed from now; targets and due resolved again)',
      )
      .argument(
        '<event-id...>',
        "the events' ids (UUIDs, as `outbox dead` and the logs show them)",
      ),
  )
    .option(
      '--receiver <key>',
      'replay to this durable receiver only (repeatable): give a new receiver the backlog',
      repeatable,
    )
    .option(
      '--tenant <name>',
      "only this tenant's events; another's are reported missing (settings.tenancy: 'column')",
    )
    .option('--column <name=value>', COLUMN_FLAG_HELP, repeatable)
    .option('--json', 'print {"reopened", "added", "missing"} on stdout')
    .addHelpText(
      'after',
      `${OPERATION_EXIT_HELP('some event ids named no event (never fired, or pruned)')}

Claimed rows (in flight) and rows still owed are left alone. A fan-out receiver's targets
and a scheduled receiver's due time are resolved again, in the replay's transaction: an
event whose payload no longer decodes is refused (exit 1), and nothing is replayed. A relay
idle on its poll is woken when the replay commits (on PostgreSQL, through the LISTEN/NOTIFY
channel \`outbox relay\` listens on).`,
    );
}

export async function replay(
  eventIds: readonly string[],
  flags: ReplayFlags,
  out: CliOutput,
  io: CliIo,
): Promise<number> {
  return withOutbox(
    flags,
    out,
    io,
    async (outbox, session) => {
      for (const key of flags.receiver ?? []) checkReceiverFlag(session.loaded.config, key);
      const result = await outbox.replayEvents(eventIds, {
        receiverKeys: flags.receiver,
        tenant: flags.tenant,
        columns: columnsFlag(session.loaded.config, flags.column),
      });
      if (flags.json) printJson(io.stdout, result);
      else {
        out.result(
          `replayed on ${session.where}: reopened ${result.reopened}, added ${result.added}`,
        );
        if (result.missing.length > 0)
          out.warn(`no such event (never fired, or pruned): ${result.missing.join(', ')}`);
      }
      return result.missing.length > 0 ? EXIT.needsAttention : EXIT.ok;
    },
    // A relay idle on its poll is woken on the commit (PostgreSQL: LISTEN/NOTIFY).
    { wakeRelays: true },
  );
}
