import { Writable } from 'node:stream';
import type { Command } from 'commander';
import type { CliIo, CliStream } from '../io.js';

/** `outbox demo`: the shop on its own temp SQLite database (never the app's). */
export function demoCommand(command: Command): Command {
  return command
    .description('run the shop demo on an embedded SQLite database of its own, from nothing')
    .option('--keep', 'keep the demo database file');
}

export async function demo(flags: { keep?: boolean }, io: CliIo): Promise<number> {
  // Imported when run: the other commands never load the demo.
  const { runDemo } = await import('../../examples/demo.js');
  return runDemo({ keep: flags.keep, stdout: writable(io.stdout), stderr: writable(io.stderr) });
}

/**
 * The demo writes to Node streams; a sink that is one (`process.stdout`) is handed over
 * as it is, any other is wrapped in a Writable that writes each chunk through at once,
 * saying whether it is a terminal as the sink does (the demo redraws its progress line
 * only on one).
 */
function writable(sink: CliStream): NodeJS.WritableStream & { isTTY?: boolean } {
  if (sink instanceof Writable) return sink;
  const stream = new Writable({
    decodeStrings: false,
    write(chunk: string | Buffer, _encoding, done) {
      sink.write(String(chunk));
      done();
    },
  });
  return Object.assign(stream, { isTTY: sink.isTTY });
}
