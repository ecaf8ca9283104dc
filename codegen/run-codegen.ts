import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type CatalogueDiff, diffCatalogues } from '../catalogue/diff.js';
import { formatCatalogueDiffText } from '../catalogue/format-diff.js';
import { parseCatalogue, readCatalogue } from '../catalogue/read-catalogue.js';
import { renderCatalogueJson } from '../catalogue/render-json.js';
import { renderCatalogueMarkdown } from '../catalogue/render-markdown.js';
import { formatLoadError, loadConfig } from '../src/cli/load-config.js';
import { OutboxError } from '../src/errors/outbox-error.js';
import { buildCatalogue, type Catalogue } from '../src/introspect/index.js';
import { analyzeConfig, type HandlerMismatch } from './analyze.js';
import { generateEmitters } from './generate-emitters.js';
import {
  DEFAULT_CATALOGUE_DIR,
  DEFAULT_OUT,
  defaultRuntimeImport,
  displayPath,
  importSpecifier,
} from './paths.js';
import { unifiedDiff } from './unified-diff.js';

/** Options of {@link runCodegen}; every path is relative to `cwd`. */
export interface CodegenOptions {
  /** The config file. @defaultValue `outbox.config.ts` */
  readonly config?: string;
  /** The generated TypeScript file. @defaultValue `src/outbox.generated.ts` */
  readonly out?: string;
  /** Where `catalogue.json` and `catalogue.md` go. @defaultValue `catalogue` */
  readonly catalogueDir?: string;
  /** The module the generated file imports outboxkit's types from. @defaultValue `outboxkit` */
  readonly importFrom?: string;
  /** Write nothing; fail when a file on disk differs from what the config produces. */
  readonly check?: boolean;
  /**
   * In check mode, diff the catalogue against this git ref's committed catalogue (the
   * pull request's base) instead of the one on disk, and fail on a breaking change.
   */
  readonly base?: string;
  /** Do not fail on breaking catalogue changes (a deliberate, announced break). */
  readonly allowBreaking?: boolean;
  /** The project root: paths resolve here and locations are relative to it. @defaultValue `process.cwd()` */
  readonly cwd?: string;
}

/** One file codegen produces. */
export interface GeneratedFile {
  /** Absolute path. */
  readonly path: string;
  /** As output shows it, relative to the project. */
  readonly display: string;
  readonly text: string;
}

/** Everything a config produces, or why it cannot. */
export type CodegenResult =
  | {
      readonly ok: true;
      readonly files: readonly GeneratedFile[];
      readonly catalogue: Catalogue;
      readonly catalogueJsonPath: string;
      readonly warnings: readonly string[];
    }
  | {
      readonly ok: false;
      readonly message: string;
      readonly mismatches?: readonly HandlerMismatch[];
    };

/**
 * Produce the generated files of a config, in memory: load it, read its source (handler
 * locations, handler types), then generate the typed emitters and the catalogue (JSON and
 * Markdown). Never writes and never throws for a bad config: the error comes back as text.
 */
export async function generate(options: CodegenOptions = {}): Promise<CodegenResult> {
  const cwd = resolve(options.cwd ?? process.cwd());
  const loaded = await loadConfig(options.config, cwd);
  if (!loaded.ok) return { ok: false, message: formatLoadError(loaded.error) };
  const { config, file: configFile } = loaded.value;
  const out = resolve(cwd, options.out ?? DEFAULT_OUT);
  const catalogueDir = resolve(cwd, options.catalogueDir ?? DEFAULT_CATALOGUE_DIR);
  try {
    const analysis = analyzeConfig(configFile, cwd, config);
    if (analysis.mismatches.length > 0) {
      return {
        ok: false,
        mismatches: analysis.mismatches,
        message: `outbox codegen: ${analysis.mismatches.length} receiver(s) cannot take their event's payload:\n${analysis.mismatches.map((m) => m.message).join('\n')}`,
      };
    }
    const catalogue = withLocations(buildCatalogue(config), analysis.locations);
    const typescript = generateEmitters({
      config,
      configImport: importSpecifier(out, configFile),
      runtimeImport: options.importFrom ?? defaultRuntimeImport(cwd, out),
      configLabel: displayPath(cwd, configFile),
    });
    const jsonPath = resolve(catalogueDir, 'catalogue.json');
    const mdPath = resolve(catalogueDir, 'catalogue.md');
    const file = (path: string, text: string): GeneratedFile => ({
      path,
      display: displayPath(cwd, path),
      text,
    });
    return {
      ok: true,
      files: [
        file(out, typescript),
        file(jsonPath, renderCatalogueJson(catalogue)),
        file(mdPath, renderCatalogueMarkdown(catalogue)),
      ],
      catalogue,
      catalogueJsonPath: jsonPath,
      warnings: analysis.warnings,
    };
  } catch (error) {
    if (error instanceof OutboxError)
      return { ok: false, message: `outbox codegen: ${error.message}` };
    throw error;
  }
}

/** The catalogue with each receiver's `location` filled in from the source. */
export function withLocations(
  catalogue: Catalogue,
  locations: ReadonlyMap<string, string>,
): Catalogue {
  const place = <R extends { key: string; location: string | null }>(r: R): R => ({
    ...r,
    location: locations.get(r.key) ?? r.location,
  });
  return {
    ...catalogue,
    events: catalogue.events.map((e) => ({ ...e, receivers: e.receivers.map(place) })),
    wildcardReceivers: catalogue.wildcardReceivers.map(place),
  };
}

/** Where {@link runCodegen} prints; the CLI passes the console, tests collect the text. */
export interface CodegenOutput {
  log(text: string): void;
  error(text: string): void;
}

/** Lines printed beyond this per stale file are summarised, so CI logs stay readable. */
const MAX_DIFF_LINES = 200;

/**
 * `outbox codegen [--check]`: generate, then write the files (or, with `check`, compare
 * them with the files on disk and print a unified diff of each stale one). Either way the
 * catalogue is diffed against the previous one (on disk, or `base`'s) and the breaking and
 * compatible changes are printed; in check mode a breaking change fails unless
 * `allowBreaking`.
 *
 * @returns the exit code: 0 up to date (or written), 1 stale, breaking or invalid.
 */
export async function runCodegen(
  options: CodegenOptions = {},
  output: CodegenOutput = { log: console.log, error: console.error },
): Promise<number> {
  const result = await generate(options);
  if (!result.ok) {
    output.error(result.message);
    return 1;
  }
  for (const w of result.warnings) output.error(`outbox codegen: warning: ${w}`);
  const cwd = resolve(options.cwd ?? process.cwd());

  let previous: { label: string; catalogue: Catalogue } | undefined;
  try {
    if (options.base !== undefined) {
      const ref = options.base.includes(':')
        ? options.base
        : `${options.base}:./${displayPath(cwd, result.catalogueJsonPath)}`;
      previous = readCatalogue(ref, cwd);
    } else if (existsSync(result.catalogueJsonPath)) {
      const label = displayPath(cwd, result.catalogueJsonPath);
      previous = {
        label,
        catalogue: parseCatalogue(readFileSync(result.catalogueJsonPath, 'utf8'), label),
      };
    }
  } catch (error) {
    if (!(error instanceof OutboxError)) throw error;
    output.error(`outbox codegen: ${error.message}`);
    if (options.check) return 1;
  }
  const diff: CatalogueDiff | undefined =
    previous && diffCatalogues(previous.catalogue, result.catalogue);
  const changed = diff && diff.breaking.length + diff.compatible.length > 0;

  if (!options.check) {
    for (const f of result.files) {
      const before = existsSync(f.path) ? readFileSync(f.path, 'utf8') : undefined;
      if (before === f.text) {
        output.log(`outbox codegen: ${f.display} is up to date`);
        continue;
      }
      mkdirSync(dirname(f.path), { recursive: true });
      writeFileSync(f.path, f.text);
      output.log(`outbox codegen: wrote ${f.display}`);
    }
    if (diff && changed && previous)
      output.log(formatCatalogueDiffText(diff, previous.label, 'the config').trimEnd());
    return 0;
  }

  const stale: string[] = [];
  for (const f of result.files) {
    const before = existsSync(f.path) ? readFileSync(f.path, 'utf8') : undefined;
    if (before === f.text) continue;
    stale.push(f.display);
    if (before === undefined) {
      output.error(`outbox codegen --check: ${f.display} is missing`);
      continue;
    }
    const lines = unifiedDiff(
      before,
      f.text,
      `${f.display} (on disk)`,
      `${f.display} (from the config)`,
    ).split('\n');
    const shown = lines.slice(0, MAX_DIFF_LINES).join('\n').trimEnd();
    const more = lines.length - 1 - MAX_DIFF_LINES;
    output.error(`${shown}${more > 0 ? `\n… ${more} more diff lines` : ''}`);
  }
  if (diff && changed && previous) {
    output.error(formatCatalogueDiffText(diff, previous.label, 'the config').trimEnd());
  }
  const breaking = (diff?.breaking.length ?? 0) > 0 && !options.allowBreaking;
  if (stale.length > 0) {
    output.error(
      `outbox codegen --check: ${stale.length} generated file(s) are stale: ${stale.join(', ')}. Run \`npx outbox codegen\` and commit the result.`,
    );
  }
  if (breaking) {
    output.error(
      `outbox codegen --check: the catalogue has ${diff?.breaking.length} breaking change(s); bump the event's version, keep the field, or pass --allow-breaking for a deliberate break.`,
    );
  }
  if (stale.length > 0 || breaking) return 1;
  output.log('outbox codegen --check: generated files and catalogue are up to date');
  return 0;
}
