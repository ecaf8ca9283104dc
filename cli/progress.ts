/**
 * How a long command (`outbox prune`, `outbox requeue-dead`) shows its progress, batch by
 * batch — one of three forms, chosen once before the work starts:
 *
 * - `bar`: stderr is a TTY (and the output is for a person): a progress bar
 *   (cli-progress, loaded here on first use, so neither the runtime nor a command that
 *   shows no bar ever loads it) over the total counted first;
 * - `lines`: not a TTY (a pipe, a log collector, CI): one line per batch, each a fact (a
 *   batch is a transaction), never an estimate;
 * - `json` (`--json`): one JSON object per batch on stderr, for machines.
 */
import type { CliStream } from './io.js';
import type { CliOutput } from './log-format.js';

/** The stream a progress form writes to: the command's stderr, or a test's fake TTY. */
export type ProgressStream = CliStream;

/** Which form the progress takes: see the module comment. */
export type ProgressForm = 'bar' | 'lines' | 'json';

/**
 * The form for a command's flags and its stream: `json` with `--json`, `bar` on a TTY
 * unless the log format is JSON (a machine reads it), else `lines`.
 */
export function progressForm(
  out: CliOutput,
  json: boolean | undefined,
  stream: ProgressStream,
): ProgressForm {
  if (json) return 'json';
  return stream.isTTY === true && out.format !== 'json' ? 'bar' : 'lines';
}

/** What {@link startProgress} shows. */
export interface ProgressOptions {
  readonly form: ProgressForm;
  /** The bar's name, e.g. `prune`. */
  readonly label: string;
  /** What the bar counts, e.g. `events`. */
  readonly unit: string;
  /** The bar's total (counted before the work: only the `bar` form needs it). */
  readonly total: number;
  /** Where it draws: the command's stderr. */
  readonly stream: ProgressStream;
}

/** A progress being shown; {@link Progress.stop} it whatever happens. */
export interface Progress {
  /**
   * One batch done: `done` so far (the bar's value), `line` for the `lines` form,
   * `fields` for the `json` form.
   */
  batch(done: number, line: string, fields: Record<string, unknown>): void;
  /** Draw the last state and let go of the terminal (idempotent). */
  stop(): void;
}

/** Start showing progress in the form given (see the module comment). */
export async function startProgress(out: CliOutput, o: ProgressOptions): Promise<Progress> {
  const stream = o.stream;
  if (o.form === 'json') {
    return {
      batch: (_done, _line, fields) => void stream.write(`${JSON.stringify(fields)}\n`),
      stop: () => {},
    };
  }
  if (o.form === 'lines') {
    return { batch: (_done, line) => out.info(line), stop: () => {} };
  }
  const { SingleBar, Presets } = (await import('cli-progress')).default;
  const bar = new SingleBar(
    {
      // cli-progress only writes to it (its cursor moves are readline's, which write
      // escapes), so any sink will do though its types ask for a whole Writable.
      stream: stream as NodeJS.WritableStream,
      format: `${o.label} [{bar}] {percentage}% | {value}/{total} ${o.unit}`,
      hideCursor: true,
      clearOnComplete: false,
      stopOnComplete: false,
      gracefulExit: false,
    },
    Presets.shades_classic,
  );
  let total = o.total;
  let stopped = false;
  bar.start(total, 0);
  return {
    batch(done) {
      // Rows that became due while it ran: the total grows rather than the bar overflowing.
      if (done > total) {
        total = done;
        bar.setTotal(total);
      }
      bar.update(done);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      bar.stop();
    },
  };
}
