/**
 * The `outbox` command line: commander wiring only; each command lives in commands/, and
 * reads and writes through the io it is handed (io.ts), never the process's globals.
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
import { type ConsoleFlags, consoleCommand, consoleServe } from './commands/console.js';
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
import { type CliIo, type CliStream, cliIo, colorsOn } from './io.js';
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
  io: CliIo,
  command: (out: CliOutput) => Promise<number>,
): Promise<number> {
  const out = cliOutput(format, io);
  try {
    return await command(out);
  } catch (error) {
    if (!(error instanceof OutboxError)) throw error;
    out.error(error.message, { code: error.code });
    return EXIT.couldNotRun;
  }
}

/**
 * The `outbox` command line: parse `argv` (as `process.argv` has it: the node binary and
 * the script first), run the command, and return its exit code instead of exiting, so a
 * test or an application runs it in-process; {@link run} is what the bin calls.
 *
 * `io` replaces the process's globals, each defaulting to the process's own (see
 * {@link CliIo}): `stdout` and `stderr` (sinks with a `write(text)`), `env` (where
 * `OUTBOX_DATABASE_URL` and `DATABASE_URL` are read), `cwd` (where the config is found and
 * `sqlite:` paths resolve) and `signal` (its abort stops a running `relay` as SIGTERM
 * does; without one, the process's SIGTERM and SIGINT). The config module is the
 * application's code: it is loaded afresh for each call and reads `process.env` as it
 * would in a process of its own.
 *
 * Every command closes what it opened (its Sequelize, the config's, the wakeup's
 * connection, the metrics endpoint) before it returns, with one exception: a relay that
 * passes `--shutdown-timeout` (exit 3) leaves the deliveries still in hand running, for
 * the process exit that follows in the bin to end them.
 *
 * Heavy commands (codegen, catalogue, demo) are imported only when invoked: the runtime
 * never loads ts-morph or handlebars. An unexpected error (a bug, not a refusal) is
 * printed as `outbox: <message>` on stderr and returns exit 1, as the bin always did.
 */
export async function main(argv: readonly string[], given: Partial<CliIo> = {}): Promise<number> {
  const io = cliIo(given);
  try {
    return await parseAndRun(argv, io);
  } catch (error) {
    io.stderr.write(`outbox: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.couldNotRun;
  }
}

/** What {@link main} runs: the commands declared on a program that writes to `io`. */
async function parseAndRun(argv: readonly string[], io: CliIo): Promise<number> {
  let code: number = EXIT.ok;
  const program = new Command('outbox')
    // Before the commands are declared: each subcommand copies it when created.
    .configureOutput(commanderOutput(io))
    .description('outboxkit: the transactional outbox for Sequelize')
    .version(packageVersion(), '-V, --version', "print outboxkit's version")
    .exitOverride()
    .showHelpAfterError('(add --help for the options)');

  migrateCommand(program.command('migrate')).action(async (o: MigrateFlags) => {
    code = await refusing(o.logFormat, io, (out) => migrate(o, out, io));
  });
  relayCommand(program.command('relay')).action(async (o: RelayFlags) => {
    code = await refusing(o.logFormat, io, (out) => relay(o, out, io));
  });
  healthCommand(program.command('health')).action(async (o: HealthFlags) => {
    code = await refusing(o.logFormat, io, (out) => health(o, out, io));
  });
  // The operator's operations on rows (issue 9: dead, requeue-dead, replay, cancel).
  deadCommand(program.command('dead')).action(async (o: DeadFlags) => {
    code = await refusing(o.logFormat, io, (out) => dead(o, out, io));
  });
  requeueDeadCommand(program.command('requeue-dead')).action(async (o: RequeueDeadFlags) => {
    code = await refusing(o.logFormat, io, (out) => requeueDead(o, out, io));
  });
  replayCommand(program.command('replay')).action(async (ids: string[], o: ReplayFlags) => {
    code = await refusing(o.logFormat, io, (out) => replay(ids, o, out, io));
  });
  cancelCommand(program.command('cancel')).action(async (ids: string[], o: CancelFlags) => {
    code = await refusing(o.logFormat, io, (out) => cancel(ids, o, out, io));
  });
  pruneCommand(program.command('prune')).action(async (o: PruneFlags) => {
    code = await refusing(o.logFormat, io, (out) => prune(o, out, io));
  });
  quietReceiversCommand(program.command('quiet-receivers')).action(
    async (o: QuietReceiversFlags) => {
      code = await refusing(o.logFormat, io, (out) => quietReceivers(o, out, io));
    },
  );
  // The operations console in the browser (issue 32).
  consoleCommand(program.command('console')).action(async (o: ConsoleFlags) => {
    code = await refusing(o.logFormat, io, (out) => consoleServe(o, out, io));
  });
  demoCommand(program.command('demo')).action(async (o: { keep?: boolean }) => {
    code = await demo(o, io);
  });
  codegenCommand(program.command('codegen')).action(
    async (o: Record<string, unknown>, cmd: Command) => {
      code = await codegen(o, cmd.args, io);
    },
  );
  catalogueCommand(program.command('catalogue')).action(
    async (
      action: string,
      oldRef: string | undefined,
      newRef: string | undefined,
      o: Record<string, unknown>,
    ) => {
      code = await catalogue(action, oldRef, newRef, o, io);
    },
  );

  try {
    await program.parseAsync(argv as string[]);
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    if (error instanceof OutboxError) {
      io.stderr.write(`outbox: ${error.message}\n`);
      return EXIT.couldNotRun;
    }
    throw error;
  }
  return code;
}

/**
 * Where commander writes the help, the version and its parse errors: `io`'s streams, the
 * help wrapped to a terminal's width as commander does for the process's own.
 */
function commanderOutput(io: CliIo) {
  // Off a terminal, no width: commander's own default, though its types say a number.
  const width = (stream: CliStream) => (stream.isTTY ? stream.columns : undefined) as number;
  return {
    writeOut: (text: string) => void io.stdout.write(text),
    writeErr: (text: string) => void io.stderr.write(text),
    getOutHelpWidth: () => width(io.stdout),
    getErrHelpWidth: () => width(io.stderr),
    getOutHasColors: () => colorsOn(io.stdout, io.env),
    getErrHasColors: () => colorsOn(io.stderr, io.env),
  };
}

/** Resolve once `stream` has written everything handed to it. */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) resolve();
    else stream.write('', () => resolve());
  });
}

/**
 * What `bin/outbox.js` runs: {@link main} with the process's own io (its streams,
 * environment, working directory and real SIGTERM/SIGINT), then exit AT ONCE with its
 * code. Each command closes what it opened (its Sequelize, the config's, the wakeup's
 * connection), and the exit stops what the config module itself may have started (a
 * timer, another pool), so `migrate` and `relay --once` never linger, and a stopped relay
 * exits right after `relay stopped`.
 */
export async function run(argv: readonly string[]): Promise<never> {
  const code = await main(argv);
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}
