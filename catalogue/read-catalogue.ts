import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ValidationError } from '../src/errors/outbox-error.js';
import { CATALOGUE_FORMAT, type Catalogue } from '../src/introspect/index.js';

/** Where `codegen` writes the catalogue, and where `catalogue diff REF` looks inside a ref. */
export const DEFAULT_CATALOGUE_JSON = 'catalogue/catalogue.json';

/** A catalogue read from a file or a git ref, with how to name it in output. */
export interface ReadCatalogue {
  readonly label: string;
  readonly catalogue: Catalogue;
}

/**
 * Read a catalogue named the way a person types it on the command line:
 *
 * - a file (`catalogue/catalogue.json`, `/tmp/old.json`);
 * - a git object `REF:PATH` (`origin/main:catalogue/catalogue.json`);
 * - a bare git ref (`origin/main`, `v1.2.0`, `HEAD~1`), read at `catalogue/catalogue.json`
 *   relative to the working directory.
 *
 * @throws {ValidationError} naming the ref when it is neither, or is not a catalogue.
 */
export function readCatalogue(ref: string, cwd = process.cwd()): ReadCatalogue {
  const file = resolve(cwd, ref);
  if (existsSync(file))
    return { label: ref, catalogue: parseCatalogue(readFileSync(file, 'utf8'), ref) };
  const spec = ref.includes(':') ? ref : `${ref}:./${DEFAULT_CATALOGUE_JSON}`;
  let text: string;
  try {
    text = execFileSync('git', ['show', spec], {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 256 * 1024 * 1024,
    });
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? '').trim();
    throw new ValidationError(
      `${ref} is neither a file nor a catalogue in git (git show ${spec}: ${stderr.split('\n')[0] || (error as Error).message})`,
      { path: ref },
    );
  }
  return { label: spec, catalogue: parseCatalogue(text, spec) };
}

/**
 * Parse and shape-check a catalogue's JSON.
 *
 * @throws {ValidationError} for text that is not JSON, not a catalogue, or a catalogue of a
 * newer format this version cannot read.
 */
export function parseCatalogue(text: string, label: string): Catalogue {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ValidationError(`${label} is not JSON: ${(error as Error).message}`, {
      path: label,
    });
  }
  const c = value as Partial<Catalogue> | null;
  if (
    typeof c !== 'object' ||
    c === null ||
    typeof c.format !== 'number' ||
    !Array.isArray(c.events) ||
    !Array.isArray(c.wildcardReceivers)
  ) {
    throw new ValidationError(
      `${label} is not an outbox catalogue (expected { format, events, wildcardReceivers }, as npx outbox codegen writes)`,
      { path: label },
    );
  }
  if (c.format > CATALOGUE_FORMAT) {
    throw new ValidationError(
      `${label} has catalogue format ${c.format}, newer than this outboxkit reads (${CATALOGUE_FORMAT}); upgrade outboxkit`,
      { path: label },
    );
  }
  return c as Catalogue;
}
