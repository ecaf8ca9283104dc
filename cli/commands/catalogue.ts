import type { Command } from 'commander';
import type { CliIo } from '../io.js';
import { configOption } from '../options.js';

/** The actions of `outbox catalogue`. */
const ACTIONS = ['diff', 'asyncapi'] as const;
type Action = (typeof ACTIONS)[number];

function isAction(value: string): value is Action {
  return (ACTIONS as readonly string[]).includes(value);
}

const HELP = `
Actions:
  diff OLD [NEW]      compare two catalogues (files or git refs; NEW defaults to
                      catalogue/catalogue.json) and print the breaking and compatible
                      changes. --format text|json, --allow-breaking.
                      Exit: 0 no breaking change (or --allow-breaking), 1 a breaking
                      change, 2 a usage error or a catalogue that could not be read.
  asyncapi [FILE]     print the AsyncAPI 3.0.0 document of the catalogue on stdout: one
                      channel per event (address: the event's name), its payload's JSON
                      Schema and the standard headers, a send operation for the application
                      firing it and a receive operation per durable receiver.
                      The catalogue is FILE (a catalogue file or git ref), else the config
                      of --config, else catalogue/catalogue.json, else the config found.
                      --format yaml|json (default yaml), --title T and --api-version V
                      (default: the project's package.json name and version;
                      --version is the CLI's own, hence --api-version).
                      Exit: 0 written, 1 could not run (a bad option, a catalogue or
                      config that does not load).

Examples:
  $ outbox catalogue diff origin/main
  $ outbox catalogue asyncapi > asyncapi.yaml
  $ outbox catalogue asyncapi --config outbox.config.ts --format json --api-version 2.1.0
`;

/**
 * The options of one action given to the other: refused rather than ignored, so
 * `catalogue diff --config x` does not quietly diff something else than was meant.
 */
const STRAY: Record<Action, readonly { key: string; flag: string }[]> = {
  diff: [
    { key: 'config', flag: '--config' },
    { key: 'title', flag: '--title' },
    { key: 'apiVersion', flag: '--api-version' },
  ],
  asyncapi: [{ key: 'allowBreaking', flag: '--allow-breaking' }],
};

/** `outbox catalogue diff OLD [NEW]` and `outbox catalogue asyncapi [FILE]`. */
export function catalogueCommand(command: Command): Command {
  return configOption(
    command
      .description(
        'catalogue tools: diff OLD [NEW] (breaking changes between two catalogues), asyncapi [FILE] (an AsyncAPI 3 document)',
      )
      .argument('<action>', ACTIONS.join(' or '))
      .argument(
        '[old]',
        'diff: the old catalogue (file, git ref, or REF:PATH); asyncapi: the catalogue',
      )
      .argument('[new]', 'diff: the new catalogue (file, git ref, or REF:PATH)'),
  )
    .option('--allow-breaking', 'diff: exit 0 even on breaking changes')
    .option('--format <format>', 'diff: text (default) or json; asyncapi: yaml (default) or json')
    .option('--title <title>', "asyncapi: info.title (default: package.json's name)")
    .option('--api-version <version>', "asyncapi: info.version (default: package.json's version)")
    .addHelpText('after', HELP);
}

export async function catalogue(
  action: string,
  oldRef: string | undefined,
  newRef: string | undefined,
  flags: Record<string, unknown>,
  io: CliIo,
): Promise<number> {
  if (!isAction(action)) {
    io.stderr.write(
      `outbox catalogue: unknown action "${action}" (known: ${ACTIONS.join(', ')}; see outbox catalogue --help)\n`,
    );
    return 2;
  }
  const stray = STRAY[action].filter((o) => flags[o.key] !== undefined);
  if (stray.length > 0) {
    io.stderr.write(
      `outbox catalogue ${action}: ${stray.map((o) => o.flag).join(', ')} ${stray.length === 1 ? 'is' : 'are'} not an option of ${action} (see outbox catalogue --help)\n`,
    );
    return action === 'diff' ? 2 : 1;
  }
  if (action === 'asyncapi') {
    // Imported when run: yaml loads only for this action.
    const { runAsyncApiCommand } = await import('../../catalogue/asyncapi-cli.js');
    return runAsyncApiCommand(oldRef, newRef, flags, io);
  }
  // Imported when run: handlebars loads only for the catalogue.
  const { runCatalogueCommand } = await import('../../catalogue/cli.js');
  return runCatalogueCommand(action, oldRef, newRef, flags, io);
}
