import type { Command } from 'commander';
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

export async function codegen(
  flags: Record<string, unknown>,
  args: readonly string[],
): Promise<number> {
  // Imported when run: ts-morph loads only for codegen.
  const { runCodegenCommand } = await import('../../codegen/cli.js');
  return runCodegenCommand(flags, args);
}
