import type { Command } from 'commander';

/** `outbox demo`: the shop on its own temp SQLite database (never the app's). */
export function demoCommand(command: Command): Command {
  return command
    .description('run the shop demo on an embedded SQLite database of its own, from nothing')
    .option('--keep', 'keep the demo database file');
}

export async function demo(flags: { keep?: boolean }): Promise<number> {
  // Imported when run: the other commands never load the demo.
  const { runDemo } = await import('../../examples/demo.js');
  return runDemo({ keep: flags.keep });
}
