import { Command, CommanderError } from 'commander';
import { OutboxError } from '../errors/outbox-error.js';
import { createOutbox } from '../outbox.js';
import { connect } from './connect.js';
import { formatLoadError, type LoadedConfig, loadConfig } from './load-config.js';

/** A command's result: the process exit code. */
type Run = Promise<number>;

/** Load the config or print why not; returns undefined after printing. */
async function load(file: string | undefined): Promise<LoadedConfig | undefined> {
  const result = await loadConfig(file);
  if (!result.ok) {
    console.error(formatLoadError(result.error));
    return undefined;
  }
  return result.value;
}

/**
 * The `outbox` command line. Returns the exit code instead of exiting, so tests run it
 * in-process. Heavy commands (codegen, catalogue, demo) are imported only when invoked:
 * the runtime never loads ts-morph or handlebars.
 */
export async function main(argv: readonly string[]): Promise<number> {
  let code = 0;
  const program = new Command('outbox')
    .description('outboxkit: the transactional outbox for Sequelize')
    .exitOverride()
    .showHelpAfterError();

  program
    .command('migrate')
    .description('create or upgrade the outbox tables (idempotent)')
    .option('-c, --config <file>', 'the config file', 'outbox.config.ts')
    .option(
      '--url <url>',
      "database URL (else OUTBOX_DATABASE_URL, the config's sequelize export, or sqlite:outbox.sqlite)",
    )
    .option('--schema <name>', 'PostgreSQL schema for the tables')
    .action(async (o: { config: string; url?: string; schema?: string }) => {
      code = await migrate(o);
    });

  program
    .command('relay')
    .description('deliver owed events until SIGTERM/SIGINT')
    .option('-c, --config <file>', 'the config file', 'outbox.config.ts')
    .option('--url <url>', 'database URL')
    .option('--schema <name>', 'PostgreSQL schema for the tables')
    .option('--once', 'claim until nothing is owed, then exit')
    .option('--batch-size <n>', 'rows per claim', Number)
    .option('--concurrency <n>', 'deliveries at once', Number)
    .option(
      '--allow-unsafe-concurrency',
      'SQLite: start even though another relay holds the single-relay lock (only when you know it is gone)',
    )
    .action(async (o: RelayCliOptions) => {
      code = await relay(o);
    });

  program
    .command('demo')
    .description('run the shop demo on an embedded SQLite database, from nothing')
    .option('--keep', 'keep the demo database file')
    .action(async (o: { keep?: boolean }) => {
      const { runDemo } = await import('../../examples/demo.js');
      code = await runDemo({ keep: o.keep });
    });

  program
    .command('codegen')
    .description('generate typed emitters and the catalogue from outbox.config.ts')
    .option('-c, --config <file>', 'the config file', 'outbox.config.ts')
    .option('--out <file>', 'the generated TypeScript file', 'src/outbox.generated.ts')
    .option('--catalogue-dir <dir>', 'where catalogue.json and catalogue.md go', 'catalogue')
    .option('--import-from <module>', "where the generated file imports outboxkit's types from")
    .option('--check', 'write nothing; fail when the generated files are stale')
    .option('--base <ref>', "with --check: diff the catalogue against this git ref's")
    .option('--allow-breaking', 'with --check: do not fail on breaking catalogue changes')
    .action(async (o: Record<string, unknown>, cmd: Command) => {
      const { runCodegenCommand } = await import('../../codegen/cli.js');
      code = await runCodegenCommand(o, cmd.args);
    });

  program
    .command('catalogue')
    .description(
      'catalogue tools: diff OLD [NEW] (files or git refs; NEW defaults to catalogue/catalogue.json)',
    )
    .argument('<action>', 'diff')
    .argument('[old]', 'the old catalogue (file, git ref, or REF:PATH)')
    .argument('[new]', 'the new catalogue (file, git ref, or REF:PATH)')
    .option('--allow-breaking', 'exit 0 even on breaking changes')
    .option('--format <format>', 'text or json', 'text')
    .action(
      async (
        action: string,
        oldRef: string | undefined,
        newRef: string | undefined,
        o: Record<string, unknown>,
      ) => {
        const { runCatalogueCommand } = await import('../../catalogue/cli.js');
        code = await runCatalogueCommand(action, oldRef, newRef, o);
      },
    );

  try {
    await program.parseAsync(argv as string[]);
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    if (error instanceof OutboxError) {
      console.error(`outbox: ${error.message}`);
      return 1;
    }
    throw error;
  }
  return code;
}

async function migrate(o: { config: string; url?: string; schema?: string }): Run {
  const loaded = await load(o.config);
  if (!loaded) return 1;
  const { sequelize, owned, where } = connect(loaded, o.url);
  try {
    const outbox = createOutbox(loaded.config, { sequelize, schema: o.schema, wakeup: null });
    await outbox.migrate();
    console.log(`outbox: migrated ${where}`);
    return 0;
  } finally {
    if (owned) await sequelize.close();
  }
}

interface RelayCliOptions {
  config: string;
  url?: string;
  schema?: string;
  once?: boolean;
  batchSize?: number;
  concurrency?: number;
  allowUnsafeConcurrency?: boolean;
}

async function relay(o: RelayCliOptions): Run {
  const loaded = await load(o.config);
  if (!loaded) return 1;
  const { sequelize, owned, where } = connect(loaded, o.url);
  const stop = new AbortController();
  const onSignal = () => {
    console.error('outbox: stopping — finishing the deliveries in hand, handing the rest back');
    stop.abort();
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  // LISTEN/NOTIFY where the database can serve it (its capabilities say), else polling.
  const { listenNotifyWakeup } = await import('../wakeups/listen-notify.js');
  const wakeup = listenNotifyWakeup();
  const served = wakeup.capabilities.dialects?.includes(sequelize.getDialect()) ?? true;
  const outbox = createOutbox(loaded.config, {
    sequelize,
    schema: o.schema,
    wakeup: served ? wakeup : null,
  });
  try {
    console.error(`outbox: relay running on ${where}${o.once ? ' (once)' : ''}`);
    const report = await outbox.runRelay({
      untilIdle: o.once,
      signal: stop.signal,
      batchSize: o.batchSize,
      concurrency: o.concurrency,
      allowUnsafeConcurrency: o.allowUnsafeConcurrency,
    });
    console.error(
      `outbox: relay stopped — succeeded ${report.succeeded}, failed ${report.failed}, dead ${report.dead}, orphaned ${report.orphaned}`,
    );
    return 0;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await outbox.close();
    if (owned) await sequelize.close();
  }
}
