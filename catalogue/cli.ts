import { OutboxError } from '../src/errors/outbox-error.js';
import type { LogStream } from '../src/observe/write-logger.js';
import { diffCatalogues } from './diff.js';
import { formatCatalogueDiffJson, formatCatalogueDiffText } from './format-diff.js';
import { DEFAULT_CATALOGUE_JSON, readCatalogue } from './read-catalogue.js';

/** Options of `outbox catalogue`, as commander parses them. */
export interface CatalogueCommandOptions {
  /** Exit 0 even when a change is breaking (a deliberate, announced break). */
  readonly allowBreaking?: boolean;
  /** `text` (the default) for people, `json` for pipelines. */
  readonly format?: string;
}

/**
 * Where a catalogue command reads and writes: the CLI's io (`main(argv, io)`), the
 * process's own by default. Files and git refs resolve in `cwd`.
 */
export interface CatalogueCommandIo {
  readonly stdout: LogStream;
  readonly stderr: LogStream;
  readonly cwd: string;
}

/** The process's own streams and working directory. */
function processIo(): CatalogueCommandIo {
  return { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd() };
}

/**
 * `outbox catalogue diff OLD [NEW]`: compare two catalogues (files or git refs; NEW
 * defaults to `catalogue/catalogue.json`) and print the breaking and compatible changes.
 *
 * Exit codes: 0 no breaking change (or `--allow-breaking`), 1 a breaking change, 2 a
 * usage error or a catalogue that could not be read.
 */
export async function runCatalogueCommand(
  action: string,
  oldRef: string | undefined,
  newRef: string | undefined,
  options: CatalogueCommandOptions,
  io: CatalogueCommandIo = processIo(),
): Promise<number> {
  const error = (line: string) => void io.stderr.write(`${line}\n`);
  if (action !== 'diff') {
    error(`outbox catalogue: unknown action "${action}" (known: diff)`);
    return 2;
  }
  if (oldRef === undefined) {
    error(
      'outbox catalogue diff: name the old catalogue: a file or a git ref (outbox catalogue diff origin/main)',
    );
    return 2;
  }
  const format = options.format ?? 'text';
  if (format !== 'text' && format !== 'json') {
    error(`outbox catalogue diff: --format must be text or json (got "${format}")`);
    return 2;
  }
  try {
    const before = readCatalogue(oldRef, io.cwd);
    const after = readCatalogue(newRef ?? DEFAULT_CATALOGUE_JSON, io.cwd);
    const diff = diffCatalogues(before.catalogue, after.catalogue);
    const print = format === 'json' ? formatCatalogueDiffJson : formatCatalogueDiffText;
    io.stdout.write(print(diff, before.label, after.label));
    if (diff.breaking.length > 0 && !options.allowBreaking) {
      if (format === 'text') {
        error(
          `outbox catalogue diff: ${diff.breaking.length} breaking change(s); bump the event's version, keep the field, or pass --allow-breaking for a deliberate break`,
        );
      }
      return 1;
    }
    return 0;
  } catch (caught) {
    if (caught instanceof OutboxError) {
      error(`outbox catalogue diff: ${caught.message}`);
      return 2;
    }
    throw caught;
  }
}
