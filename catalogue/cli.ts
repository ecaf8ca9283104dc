import { OutboxError } from '../src/errors/outbox-error.js';
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
): Promise<number> {
  if (action !== 'diff') {
    console.error(`outbox catalogue: unknown action "${action}" (known: diff)`);
    return 2;
  }
  if (oldRef === undefined) {
    console.error(
      'outbox catalogue diff: name the old catalogue: a file or a git ref (outbox catalogue diff origin/main)',
    );
    return 2;
  }
  const format = options.format ?? 'text';
  if (format !== 'text' && format !== 'json') {
    console.error(`outbox catalogue diff: --format must be text or json (got "${format}")`);
    return 2;
  }
  try {
    const before = readCatalogue(oldRef);
    const after = readCatalogue(newRef ?? DEFAULT_CATALOGUE_JSON);
    const diff = diffCatalogues(before.catalogue, after.catalogue);
    const print = format === 'json' ? formatCatalogueDiffJson : formatCatalogueDiffText;
    process.stdout.write(print(diff, before.label, after.label));
    if (diff.breaking.length > 0 && !options.allowBreaking) {
      if (format === 'text') {
        console.error(
          `outbox catalogue diff: ${diff.breaking.length} breaking change(s); bump the event's version, keep the field, or pass --allow-breaking for a deliberate break`,
        );
      }
      return 1;
    }
    return 0;
  } catch (error) {
    if (error instanceof OutboxError) {
      console.error(`outbox catalogue diff: ${error.message}`);
      return 2;
    }
    throw error;
  }
}
