import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';

/** Where the generated TypeScript goes unless `--out` says otherwise. */
export const DEFAULT_OUT = 'src/outbox.generated.ts';
/** Where `catalogue.json` and `catalogue.md` go unless `--catalogue-dir` says otherwise. */
export const DEFAULT_CATALOGUE_DIR = 'catalogue';

/** A path relative to `from`'s directory as an ESM import specifier, `.ts` → `.js`. */
export function importSpecifier(fromFile: string, toFile: string): string {
  let path = relative(dirname(fromFile), toFile).split(sep).join('/');
  path = path.replace(/\.(m|c)?tsx?$/, (_, m: string | undefined) => `.${m ?? ''}js`);
  return path.startsWith('.') ? path : `./${path}`;
}

/**
 * Where the generated file imports outboxkit's types from: `outboxkit`, except inside
 * outboxkit's own repository, which has no installed copy of itself to import and uses
 * its sources (`./index.js`).
 */
export function defaultRuntimeImport(projectRoot: string, outFile: string): string {
  const manifest = join(projectRoot, 'package.json');
  if (existsSync(manifest)) {
    try {
      const { name } = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string };
      if (name === 'outboxkit') return importSpecifier(outFile, join(projectRoot, 'src/index.ts'));
    } catch {
      // An unreadable manifest is not ours to report: fall back to the package name.
    }
  }
  return 'outboxkit';
}

/** A path as output and the catalogue show it: relative to the project, with `/`. */
export function displayPath(projectRoot: string, file: string): string {
  return relative(projectRoot, file).split(sep).join('/');
}
