/**
 * The `outbox` command line: commander wiring only; each command lives in commands/.
 * The CLI is its own top-level folder: it may import the runtime (src/), codegen/,
 * catalogue/ and examples/; nothing imports it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import { OutboxError } from '../src/errors/outbox-error.js';
import { type CancelFlags, cancel, cancelCommand } from './commands/cancel.js';
import { catalogue, catalogueCommand } from './commands/catalogue.js';
import { codegen, codegenCommand } from './commands/codegen.js';
import { type DeadFlags, dead, deadCommand } from './commands/dead.js';
import { demo, demoCommand } from './commands/demo.js';
import { type HealthFlags, health, healthCommand } from './commands/health.js';
import { type MigrateFlags, migrate, migrateCommand } from './commands/migrate.js';
import { type PruneFlags, prune, pruneCommand } from './commands/prune.js';
import {
  type QuietReceiversFlags,
  quietReceivers,
  quietReceiversCommand,
} from './commands/quiet-receivers.js';
import { type RelayFlags, relay, relayCommand } from './commands/relay.js';
import { type ReplayFlags, replay, replayCommand } from './commands/replay.js';
import { type RequeueDeadFlags, requeueDead, requeueDeadCommand } from './commands/requeue-dead.js';
import { EXIT } from './exit-codes.js';
import { type CliOutput, cliOutput, type LogFormat } from './log-format.js';

/** outboxkit's version, from the package.json above this file (source or dist/). */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'outboxkit' && pkg.version) return pkg.version;
    }
    dir = dirname(dir);
  }
  return 'unknown';
}

/**
 * Run a command that connects, printing a refusal (an {@link OutboxError}: no database, a
 * config that does not load, tables missing) as one readable message and exit 1.
 */
async function refusing(
  format: LogFormat | undefined,
  command: (out: CliOutput) => Promise<number>,
): Promise<number> {
  const out = cliOutput(format);
  try {
    return await command(out);
  } catch (error) {
    if (!(error instanceof OutboxError)) throw error;
    out.error(error.message, { code: error.code });
    return EXIT.couldNotRun;
  }
}

/**
 * The `outbox` command line. Returns the exit code instead of exiting, so tests run it
 * in-process; {@link run} is what the bin calls. Heavy commands (codegen, catalogue, demo)
 * are imported only when invoked: the runtime never loads ts-morph or handlebars.
 */
export async function main(argv: readonly string[]): Promise<number> {
  let code: number = EXIT.ok;
  const program = new Command('outbox')
    .description('outboxkit: the transactional outbox for Sequelize')
    .version(packageVersion(), '-V, --version', "print outboxkit's version")
    .exitOverride()
    .showHelpAfterError('(add --help for the options)');

  migrateCommand(program.command('migrate')).action(async (o: MigrateFlags) => {
    code = await refusing(o.logFormat, (out) => migrate(o, out));
  });
  relayCommand(program.command('relay')).action(async (o: RelayFlags) => {
    code = await refusing(o.logFormat, (out) => relay(o, out));
  });
  healthCommand(program.command('health')).action(async (o: HealthFlags) => {
    code = await refusing(o.logFormat, (out) => health(o, out));
  });
  // The operator's operations on rows (issue 9: dead, requeue-dead, replay, cancel).
  deadCommand(program.command('dead')).action(async (o: DeadFlags) => {
    code = await refusing(o.logFormat, (out) => dead(o, out));
  });
  requeueDeadCommand(program.command('requeue-dead')).action(async (o: RequeueDeadFlags) => {
    code = await refusing(o.logFormat, (out) => requeueDead(o, out));
  });
  replayCommand(program.command('replay')).action(async (ids: string[], o: ReplayFlags) => {
    code = await refusing(o.logFormat, (out) => replay(ids, o, out));
  });
  cancelCommand(program.command('cancel')).action(async (ids: string[], o: CancelFlags) => {
    code = await refusing(o.logFormat, (out) => cancel(ids, o, out));
  });
  pruneCommand(program.command('prune')).action(async (o: PruneFlags) => {
    code = await refusing(o.logFormat, (out) => prune(o, out));
  });
  quietReceiversCommand(program.command('quiet-receivers')).action(
    async (o: QuietReceiversFlags) => {
      code = await refusing(o.logFormat, (out) => quietReceivers(o, out));
    },
  );
  demoCommand(program.command('demo')).action(async (o: { keep?: boolean }) => {
    code = await demo(o);
  });
  codegenCommand(program.command('codegen')).action(
    async (o: Record<string, unknown>, cmd: Command) => {
      code = await codegen(o, cmd.args);
    },
  );
  catalogueCommand(program.command('catalogue')).action(
    async (
      action: string,
      oldRef: string | undefined,
      newRef: string | undefined,
      o: Record<string, unknown>,
    ) => {
      code = await catalogue(action, oldRef, newRef, o);
    },
  );

  try {
    await program.parseAsync(argv as string[]);
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    if (error instanceof OutboxError) {
      console.error(`outbox: ${error.message}`);
      return EXIT.couldNotRun;
    }
    throw error;
  }
  return code;
}

/** Resolve once `stream` has written everything handed to it. */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) resolve();
    else stream.write('', () => resolve());
  });
}

/**
 * What `bin/outbox.js` runs: {@link main}, then exit AT ONCE with its code. Each command
 * closes what it opened (its Sequelize, the config's, the wakeup's connection), and the
 * exit stops what the config module itself may have started (a timer, another pool), so
 * `migrate` and `relay --once` never linger, and a stopped relay exits right after
 * `relay stopped`.
 */
export async function run(argv: readonly string[]): Promise<never> {
  let code: number;
  try {
    code = await main(argv);
  } catch (error) {
    console.error(`outbox: ${error instanceof Error ? error.message : String(error)}`);
    code = EXIT.couldNotRun;
  }
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}
