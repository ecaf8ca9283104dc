import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { formatLoadError, loadConfig } from '../src/declare/load-config.js';
import { OutboxError } from '../src/errors/outbox-error.js';
import { buildCatalogue, type Catalogue } from '../src/introspect/index.js';
import { type AsyncApiFormat, renderAsyncApi } from './asyncapi.js';
import type { CatalogueCommandIo } from './cli.js';
import { DEFAULT_CATALOGUE_JSON, readCatalogue } from './read-catalogue.js';

/** Options of `outbox catalogue asyncapi`, as commander parses them. */
export interface AsyncApiCommandOptions {
  /** Build the catalogue from this config module instead of reading a catalogue file. */
  readonly config?: string;
  /** `yaml` (the default) or `json`. */
  readonly format?: string;
  /** `info.title`; the project's package.json `name` by default. */
  readonly title?: string;
  /** `info.version`; the project's package.json `version` by default. */
  readonly apiVersion?: string;
}

/** What the command writes and where it reads from, once resolved. */
interface Resolved {
  readonly catalogue: Catalogue;
  readonly format: AsyncApiFormat;
  readonly title: string;
  readonly version: string;
}

/**
 * `outbox catalogue asyncapi [FILE | --config FILE]`: print the AsyncAPI 3.0.0 document of
 * the catalogue on stdout (`> asyncapi.yaml`).
 *
 * Where the catalogue comes from, first that applies: FILE (a catalogue JSON file or a git
 * ref, as `catalogue diff` reads them); `--config` (the config module, built as
 * `outbox.catalogue()` builds it: no `file:line` locations); `catalogue/catalogue.json`
 * when it exists (what `codegen` writes, locations included); the config found as every
 * command finds it.
 *
 * Exit codes: 0 written; 1 could not run (a bad option, a catalogue or config that does not
 * load), as the CLI's table has it. `io`: where it writes, and where paths and the
 * project's package.json are looked up (`cwd`); the process's own by default.
 */
export async function runAsyncApiCommand(
  file: string | undefined,
  extra: string | undefined,
  options: AsyncApiCommandOptions,
  io: CatalogueCommandIo = { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd() },
): Promise<number> {
  const { cwd } = io;
  const fail = (message: string) => {
    io.stderr.write(`outbox catalogue asyncapi: ${message}\n`);
    return 1;
  };
  if (extra !== undefined) return fail(`unexpected argument "${extra}" (one catalogue at most)`);
  if (file !== undefined && options.config !== undefined) {
    return fail(
      `name a catalogue file or --config, not both (got ${file} and --config ${options.config})`,
    );
  }
  const format = options.format ?? 'yaml';
  if (format !== 'yaml' && format !== 'json') {
    return fail(`--format must be yaml or json (got "${format}")`);
  }
  let resolved: Resolved;
  try {
    const catalogue = await catalogueFrom(file, options.config, cwd);
    if (typeof catalogue === 'string') {
      // Already a whole message (`outbox: invalid config at file:line …`), as codegen prints it.
      io.stderr.write(`${catalogue}\n`);
      return 1;
    }
    const project = projectPackage(cwd);
    resolved = {
      catalogue,
      format,
      title: options.title ?? project.name ?? 'outbox events',
      version: options.apiVersion ?? project.version ?? '0.0.0',
    };
  } catch (error) {
    if (error instanceof OutboxError) return fail(error.message);
    throw error;
  }
  if (resolved.title.trim() === '') return fail('--title must not be empty');
  if (resolved.version.trim() === '') return fail('--api-version must not be empty');
  io.stdout.write(renderAsyncApi(resolved.catalogue, resolved));
  return 0;
}

/** The catalogue to describe, or the reason there is none (a config that does not load). */
async function catalogueFrom(
  file: string | undefined,
  config: string | undefined,
  cwd: string,
): Promise<Catalogue | string> {
  if (file !== undefined) return readCatalogue(file, cwd).catalogue;
  if (config === undefined && existsSync(resolve(cwd, DEFAULT_CATALOGUE_JSON))) {
    return readCatalogue(DEFAULT_CATALOGUE_JSON, cwd).catalogue;
  }
  const loaded = await loadConfig(config, cwd);
  if (!loaded.ok) return formatLoadError(loaded.error);
  return buildCatalogue(loaded.value.config);
}

/**
 * The `name` and `version` of the project's package.json: the nearest one at or above
 * `cwd`, as npm finds a project's. Either may be missing (a private app without a version).
 */
export function projectPackage(cwd: string): { name?: string; version?: string } {
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      try {
        const pkg = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
        return {
          ...(typeof pkg.name === 'string' && pkg.name !== '' ? { name: pkg.name } : {}),
          ...(typeof pkg.version === 'string' && pkg.version !== ''
            ? { version: pkg.version }
            : {}),
        };
      } catch {
        return {};
      }
    }
    if (dirname(dir) === dir) return {};
  }
}
