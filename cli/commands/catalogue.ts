import type { Command } from 'commander';

/** `outbox catalogue diff OLD [NEW]`. */
export function catalogueCommand(command: Command): Command {
  return command
    .description(
      'catalogue tools: diff OLD [NEW] (files or git refs; NEW defaults to catalogue/catalogue.json)',
    )
    .argument('<action>', 'diff')
    .argument('[old]', 'the old catalogue (file, git ref, or REF:PATH)')
    .argument('[new]', 'the new catalogue (file, git ref, or REF:PATH)')
    .option('--allow-breaking', 'exit 0 even on breaking changes')
    .option('--format <format>', 'text or json', 'text');
}

export async function catalogue(
  action: string,
  oldRef: string | undefined,
  newRef: string | undefined,
  flags: Record<string, unknown>,
): Promise<number> {
  // Imported when run: handlebars loads only for the catalogue.
  const { runCatalogueCommand } = await import('../../catalogue/cli.js');
  return runCatalogueCommand(action, oldRef, newRef, flags);
}
