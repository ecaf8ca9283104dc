import type { Command } from 'commander';
import type { CodegenOptions } from '../../codegen/run-codegen.js';
import type { CliIo } from '../io.js';
import { configOption } from '../options.js';

/** `outbox codegen [--check]`: typed emitters and the catalogue from the config. */
export function codegenCommand(command: Command): Command {
  return configOption(
    command.description('generate typed emitters and the catalogue from outbox.config.ts'),
  )
    .option('--out <file>', 'the generated TypeScript file', 'src/outbox.generated.ts')
    .option('--catalogue-dir <dir>', 'where catalogue.json and catalogue.md go', 'catalogue')
    .option('--import-from <module>', "where the generated file imports outboxkit's types from")
    .option('--check', 'write nothing; fail when the generated files are stale')
    .option('--base <ref>', "with --check: diff the catalogue against this git ref's")
    .option('--allow-breaking', 'with --check: do not fail on breaking catalogue changes');
}

/**
 * Run `outbox codegen` as commander hands it over: map the parsed options onto
 * `runCodegen`, in `io.cwd`, reading the CI variables from `io.env`, printing to `io`'s
 * streams. Unknown arguments are refused by name (exit 2).
 */
export async function codegen(
  flags: Record<string, unknown>,
  args: readonly string[],
  io: CliIo,
): Promise<number> {
  if (args.length > 0) {
    io.stderr.write(
      `outbox codegen: unexpected argument(s): ${args.join(' ')} (see outbox codegen --help)\n`,
    );
    return 2;
  }
  const text = (name: string): string | undefined =>
    typeof flags[name] === 'string' ? (flags[name] as string) : undefined;
  const options: CodegenOptions = {
    config: text('config'),
    out: text('out'),
    catalogueDir: text('catalogueDir'),
    importFrom: text('importFrom'),
    base: text('base'),
    check: flags.check === true,
    allowBreaking: flags.allowBreaking === true,
    cwd: io.cwd,
    env: io.env,
  };
  // Imported when run: ts-morph loads only for codegen, and only once found (an optional
  // peer: codegen/toolchain.ts names it when it is missing).
  const { loadCodegen } = await import('../../codegen/toolchain.js');
  const { runCodegen } = await loadCodegen();
  return runCodegen(options, {
    log: (line) => void io.stdout.write(`${line}\n`),
    error: (line) => void io.stderr.write(`${line}\n`),
    // Progress on the io's own stderr when it is a terminal (never into a pipe or a CI log).
    progress: io.stderr.isTTY ? (line) => void io.stderr.write(`${line}\n`) : () => {},
  });
}
