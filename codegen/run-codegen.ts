import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type CatalogueDiff, diffCatalogues } from '../catalogue/diff.js';
import { formatCatalogueDiffText } from '../catalogue/format-diff.js';
import { parseCatalogue } from '../catalogue/read-catalogue.js';
import { renderCatalogueJson } from '../catalogue/render-json.js';
import { renderCatalogueMarkdown } from '../catalogue/render-markdown.js';
import { formatLoadError, loadConfig } from '../src/declare/load-config.js';
import { OutboxError } from '../src/errors/outbox-error.js';
import { buildCatalogue, type Catalogue, type CatalogueReceiver } from '../src/introspect/index.js';
import { analyzeConfig, type HandlerMismatch } from './analyze.js';
import { readBaseCatalogue, resolveCheckBase } from './check-base.js';
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
   * The git ref (or `REF:PATH`) whose committed catalogue the check compares with, failing
   * on a breaking change. Without it, `check` finds the base itself: the merge-base of
   * `HEAD` and the upstream default branch, or on that branch the previous commit (see
   * {@link resolveCheckBase}). When writing, the change from this ref is printed.
   * @defaultValue found from git in check mode; the catalogue on disk when writing
   */
  readonly base?: string;
  /** Do not fail on breaking catalogue changes (a deliberate, announced break). */
  readonly allowBreaking?: boolean;
  /**
   * Where the CI variables naming a pull or merge request's target branch are read.
   * @defaultValue `process.env`
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
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
export async function generate(
  options: CodegenOptions = {},
  progress: Progress = () => {},
): Promise<CodegenResult> {
  const cwd = resolve(options.cwd ?? process.cwd());
  progress(`loading ${options.config ?? 'the config'}…`);
  const loaded = await loadConfig(options.config, cwd);
  if (!loaded.ok) return { ok: false, message: formatLoadError(loaded.error) };
  const { config, file: configFile } = loaded.value;
  progress(
    `loaded ${displayPath(cwd, configFile)}: ${config.eventList.length} event(s), ${config.receivers.length} receiver(s); analysing its types (the slow part: a TypeScript program of the config and what it imports)…`,
  );
  const out = resolve(cwd, options.out ?? DEFAULT_OUT);
  const catalogueDir = resolve(cwd, options.catalogueDir ?? DEFAULT_CATALOGUE_DIR);
  try {
    const runtimeImport = options.importFrom ?? defaultRuntimeImport(cwd, out);
    const analysis = analyzeConfig(configFile, cwd, config, { file: out, runtimeImport });
    if (analysis.mismatches.length > 0) {
      return {
        ok: false,
        mismatches: analysis.mismatches,
        message: `outbox codegen: ${analysis.mismatches.length} receiver function(s) do not fit their event:\n${analysis.mismatches.map((m) => m.message).join('\n')}`,
      };
    }
    progress('analysed the types; generating the files…');
    const catalogue = withLocations(buildCatalogue(config), analysis.locations, {
      targets: analysis.targetsLocations,
      due: analysis.dueLocations,
    });
    const typescript = generateEmitters({
      config,
      configImport: importSpecifier(out, configFile),
      runtimeImport,
      configLabel: displayPath(cwd, configFile),
      captureModels: new Map(
        [...analysis.captureModels].map(([model, found]) => [
          model,
          { specifier: importSpecifier(out, found.file), name: found.name },
        ]),
      ),
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

/**
 * The catalogue with each receiver's `location` filled in from the source, and its
 * `targets` and `dueCallable` where the source found the function: the runtime's
 * stand-in (`function endpointsFor`) becomes `file:line`. A receiver the config declares
 * no targets (or due function) for keeps its null, whatever the source walk found.
 */
export function withLocations(
  catalogue: Catalogue,
  locations: ReadonlyMap<string, string>,
  functions: {
    readonly targets?: ReadonlyMap<string, string>;
    readonly due?: ReadonlyMap<string, string>;
  } = {},
): Catalogue {
  const place = (r: CatalogueReceiver): CatalogueReceiver => ({
    ...r,
    targets: r.targets === null ? null : (functions.targets?.get(r.key) ?? r.targets),
    dueCallable: r.dueCallable === null ? null : (functions.due?.get(r.key) ?? r.dueCallable),
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
  /**
   * Progress lines (`outbox codegen: loading …`, `analysing its types …`, `wrote … (12.3 s)`),
   * each with the time since the start: the type analysis takes tens of seconds on a large
   * app, and a silent command looks hung. Pass `() => {}` for none (a `--json` or quiet
   * caller).
   * @defaultValue `error` (stderr) when the process's stderr is a terminal, else none
   */
  progress?(text: string): void;
}

/** One progress line's text, without the prefix and the elapsed time. */
type Progress = (text: string) => void;

/**
 * The progress lines of one run: `outbox codegen: <text> (<elapsed> s)` to `output.progress`,
 * else to stderr when it is a terminal (never into a pipe or a CI log a test reads).
 */
function progressOf(output: CodegenOutput, startedMs: number): Progress {
  const sink =
    output.progress ?? (process.stderr.isTTY ? (text: string) => output.error(text) : undefined);
  if (!sink) return () => {};
  return (text) =>
    sink(`outbox codegen: ${text} (${((performance.now() - startedMs) / 1000).toFixed(1)} s)`);
}

/** Lines printed beyond this per stale file are summarised, so CI logs stay readable. */
const MAX_DIFF_LINES = 200;

/**
 * `outbox codegen [--check]`: generate, then write the files (or, with `check`, compare
 * them with the files on disk and print a unified diff of each stale one). The catalogue
 * is diffed against the previous one and the breaking and compatible changes are printed:
 * when writing, the one on disk (or `base`'s); in check mode, the one committed at the
 * base — `base`, else the merge-base with the upstream default branch, else the previous
 * commit on it — which is printed, as is plainly the absence of one. In check mode a
 * breaking change fails unless `allowBreaking`.
 *
 * @returns the exit code: 0 up to date (or written), 1 stale, breaking or invalid.
 */
export async function runCodegen(
  options: CodegenOptions = {},
  output: CodegenOutput = { log: console.log, error: console.error },
): Promise<number> {
  const progress = progressOf(output, performance.now());
  const result = await generate(options, progress);
  if (!result.ok) {
    output.error(result.message);
    return 1;
  }
  for (const w of result.warnings) output.error(`outbox codegen: warning: ${w}`);
  const cwd = resolve(options.cwd ?? process.cwd());

  const compared = previousCatalogue(options, cwd, result.catalogueJsonPath, output);
  if (compared === 'failed') return 1;
  const { previous, basis } = compared;
  const diff: CatalogueDiff | undefined =
    previous && diffCatalogues(previous.catalogue, result.catalogue);
  const changed = diff && diff.breaking.length + diff.compatible.length > 0;

  if (!options.check) {
    progress(`writing ${result.files.map((f) => f.display).join(', ')}…`);
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
    progress('done');
    return 0;
  }
  progress('comparing with the files on disk…');

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
  const breakingCount = diff?.breaking.length ?? 0;
  const breaking = breakingCount > 0 && !options.allowBreaking;
  if (diff && changed && previous) {
    const text = formatCatalogueDiffText(diff, previous.label, 'the config').trimEnd();
    if (breaking) output.error(text);
    else output.log(text);
  }
  const since = basis ?? displayPath(cwd, result.catalogueJsonPath);
  if (stale.length > 0) {
    output.error(
      `outbox codegen --check: ${stale.length} generated file(s) are stale: ${stale.join(', ')}. Run \`npx outbox codegen\` and commit the result.`,
    );
  }
  if (breaking) {
    output.error(
      `outbox codegen --check: the catalogue has ${breakingCount} breaking change(s) since ${since}; bump the event's version, keep the field, or pass --allow-breaking for a deliberate break.`,
    );
  }
  if (stale.length > 0 || breaking) return 1;
  if (basis === undefined) {
    output.log(
      'outbox codegen --check: generated files are up to date (the catalogue was not compared with a base)',
    );
  } else if (breakingCount > 0) {
    output.log(
      `outbox codegen --check: generated files are up to date; the catalogue's ${breakingCount} breaking change(s) since ${basis} are allowed by --allow-breaking`,
    );
  } else {
    output.log(
      `outbox codegen --check: generated files are up to date, and the catalogue has no breaking change since ${basis}`,
    );
  }
  return 0;
}

/** What the generated catalogue is diffed against, and how output names that base. */
interface Previous {
  /** The earlier catalogue, if there is one. */
  readonly previous: { readonly label: string; readonly catalogue: Catalogue } | undefined;
  /** The base the check compared with (for the closing line); `undefined` when none. */
  readonly basis: string | undefined;
}

/**
 * Find the catalogue to diff against. In check mode that is the base commit's catalogue
 * ({@link resolveCheckBase}: `--base`, else the merge-base with the upstream default
 * branch, else the previous commit on that branch), and the base is printed; with no base
 * to be found, that is said plainly, and the catalogue on disk stands in (which only
 * shows changes not yet regenerated). When writing, it is `--base`'s catalogue or the one
 * on disk.
 *
 * @returns `failed` when check mode cannot go on (a bad `--base`, an unreadable catalogue).
 */
function previousCatalogue(
  options: CodegenOptions,
  cwd: string,
  catalogueJsonPath: string,
  output: CodegenOutput,
): Previous | 'failed' {
  const prefix = options.check ? 'outbox codegen --check' : 'outbox codegen';
  const onDisk = displayPath(cwd, catalogueJsonPath);
  const fallback = (): Previous => ({
    previous: readOnDisk(catalogueJsonPath, onDisk),
    basis: undefined,
  });
  try {
    if (options.check || options.base !== undefined) {
      const base = resolveCheckBase({ base: options.base, cwd, env: options.env });
      if (base.kind === 'invalid') {
        output.error(`${prefix}: ${base.message}`);
        return options.check ? 'failed' : fallback();
      }
      if (base.kind === 'found') {
        output.log(`${prefix}: comparing the catalogue with ${base.description}`);
        const read = readBaseCatalogue(base, onDisk, cwd);
        if (read.kind === 'catalogue') {
          return {
            previous: { label: base.description, catalogue: read.catalogue },
            basis: base.description,
          };
        }
        if (base.path !== undefined) {
          output.error(`${prefix}: --base ${options.base}: ${read.spec} does not exist`);
          return options.check ? 'failed' : fallback();
        }
        output.log(
          `${prefix}: ${read.spec} does not exist: the catalogue is new since the base, so nothing in it can break`,
        );
        return { previous: undefined, basis: base.description };
      }
      output.error(
        `${prefix}: no base to compare the catalogue with: ${base.reason}. Only checked that the generated files match the config; a breaking change already committed is not caught.`,
      );
    }
    return fallback();
  } catch (error) {
    if (!(error instanceof OutboxError)) throw error;
    output.error(`${prefix}: ${error.message}`);
    return options.check ? 'failed' : { previous: undefined, basis: undefined };
  }
}

/** The catalogue on disk, labelled with its path; `undefined` when there is none yet. */
function readOnDisk(catalogueJsonPath: string, label: string): Previous['previous'] {
  if (!existsSync(catalogueJsonPath)) return undefined;
  return { label, catalogue: parseCatalogue(readFileSync(catalogueJsonPath, 'utf8'), label) };
}
