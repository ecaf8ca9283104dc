import { existsSync, readFileSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Sequelize } from 'sequelize';
import { isOutboxConfig, type OutboxConfig } from './define-outbox.js';

/** The default config file name, looked up in the working directory. */
export const DEFAULT_CONFIG_FILE = 'outbox.config.ts';

/**
 * The config file names looked up, in this order, when none is given: TypeScript first,
 * then JavaScript (ES modules or CommonJS). Each is loaded the same way, through tsx.
 */
export const DEFAULT_CONFIG_FILES: readonly string[] = [
  'outbox.config.ts',
  'outbox.config.mts',
  'outbox.config.cts',
  'outbox.config.js',
  'outbox.config.mjs',
  'outbox.config.cjs',
];

/** The extensions a config may have: TypeScript or JavaScript modules. */
export const CONFIG_EXTENSIONS: readonly string[] = ['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs'];

/** The extensions of a TypeScript config: the ones that need tsx to load. */
const TYPESCRIPT_EXTENSIONS: readonly string[] = ['.ts', '.mts', '.cts'];

/**
 * The range of tsx a TypeScript config is loaded with: the major of its range in
 * package.json `peerDependencies` (test/packaging/manifest.test.ts holds them together).
 */
export const TSX_RANGE = '^4';

/** A config file loaded: the config, and what else the module exported for the CLI. */
export interface LoadedConfig {
  readonly file: string;
  readonly config: OutboxConfig;
  /** A Sequelize instance the module exports as `sequelize`, if any. */
  readonly sequelize: Sequelize | undefined;
  /** The module's other named exports. */
  readonly module: Record<string, unknown>;
}

/**
 * Why a config could not be loaded, as data the CLI prints (never a stack trace).
 *
 * - `missing`: no file there.
 * - `syntax`: the file does not parse; `line`/`column` point at the error.
 * - `invalid`: it loaded, but `defineOutbox` refused it, or it exports no config; `line`
 *   points at the declaration at fault when the source shows it.
 * - `import`: running it threw (a missing import, an error at top level); `line` is the
 *   config's own frame when the stack shows one.
 */
export interface ConfigLoadError {
  readonly kind: 'missing' | 'syntax' | 'invalid' | 'import';
  readonly file: string;
  readonly message: string;
  /** 1-based line in `file`, when known. */
  readonly line?: number;
  /** 1-based column in `file`, when known. */
  readonly column?: number;
}

/** The result of {@link loadConfig}: a config or a tagged error, never a throw. */
export type LoadConfigResult =
  | { readonly ok: true; readonly value: LoadedConfig }
  | { readonly ok: false; readonly error: ConfigLoadError };

/**
 * Find and load `outbox.config.ts` (or the first of {@link DEFAULT_CONFIG_FILES} that
 * exists, or `file`, relative to `cwd`) through tsx, and check that its default export is
 * a `defineOutbox(...)` result. `.js`, `.mjs` and `.cjs` configs load like `.ts` ones.
 *
 * tsx is imported here, lazily, on the first load: `import 'outboxkit'` never loads it
 * (this module is not re-exported from the package root; the CLI and codegen import it).
 * tsx is an OPTIONAL peer dependency, so that a production install need not carry it
 * (with esbuild, 12 MB): only a TypeScript config needs it. When it is not installed a
 * `.js`/`.mjs`/`.cjs` config loads with Node's own `import()`, and a TypeScript one comes
 * back as an `import` error saying what to install or to compile.
 *
 * Never throws: a missing file, a syntax error (with its position), a config
 * `defineOutbox` refuses (with the line of the declaration at fault) or a module that
 * throws while loading comes back as a tagged error the CLI prints as `file:line:column`
 * and a message — a person fixing a config wants the place, not a stack trace.
 */
export async function loadConfig(
  file: string | undefined,
  cwd = process.cwd(),
): Promise<LoadConfigResult> {
  const path = resolve(
    cwd,
    file ?? DEFAULT_CONFIG_FILES.find((f) => existsSync(resolve(cwd, f))) ?? DEFAULT_CONFIG_FILE,
  );
  if (!CONFIG_EXTENSIONS.includes(extname(path))) {
    return fail({
      kind: 'invalid',
      file: path,
      message: `a config is a TypeScript or JavaScript module (${CONFIG_EXTENSIONS.join(', ')}); got ${extname(path) || 'a file without an extension'}`,
    });
  }
  if (!existsSync(path)) {
    return fail({
      kind: 'missing',
      file: path,
      message: `no config at ${path}; create ${DEFAULT_CONFIG_FILE} (export default defineOutbox({ events, receivers })) or pass --config`,
    });
  }
  let mod: Record<string, unknown>;
  try {
    const tsx = await importTsx();
    if (!tsx && TYPESCRIPT_EXTENSIONS.includes(extname(path))) {
      return fail({
        kind: 'import',
        file: path,
        message: `a TypeScript config needs tsx, which is not installed: npm install --save-dev tsx@${TSX_RANGE} (a dependency, npm install tsx@${TSX_RANGE}, where the CLI runs on a production install), or compile the config to JavaScript and pass --config outbox.config.js`,
      });
    }
    const url = pathToFileURL(path).href;
    mod = (await (tsx ? tsx.tsImport(url, import.meta.url) : import(url))) as Record<
      string,
      unknown
    >;
  } catch (error) {
    return fail(describeLoadFailure(error, path));
  }
  const config =
    (mod.default as { default?: unknown } | undefined)?.default ?? mod.default ?? mod.config;
  if (!isOutboxConfig(config)) {
    return fail({
      kind: 'invalid',
      file: path,
      message: `the config must \`export default defineOutbox({ ... })\` (its default export is ${config === undefined ? 'missing' : `a ${typeof config}`})`,
    });
  }
  const sequelize = mod.sequelize as Sequelize | undefined;
  return { ok: true, value: { file: path, config, sequelize, module: mod } };
}

/** tsx's loader, or undefined when tsx (an optional peer) is not installed. */
async function importTsx(): Promise<typeof import('tsx/esm/api') | undefined> {
  try {
    return await import('tsx/esm/api');
  } catch (error) {
    const e = error as { code?: unknown; message?: unknown } | null;
    // tsx itself missing; a broken install of it says so in its own words.
    if (e?.code === 'ERR_MODULE_NOT_FOUND' && /'tsx(?:\/[^']*)?'/.test(String(e.message))) {
      return undefined;
    }
    throw error;
  }
}

function fail(error: ConfigLoadError): LoadConfigResult {
  return { ok: false, error };
}

/** What a failed import means: a syntax error, a refused config, or a throw. */
function describeLoadFailure(error: unknown, path: string): ConfigLoadError {
  const e = (error ?? {}) as Error & {
    code?: string;
    path?: string;
    errors?: { text: string; location?: { line: number; column: number; file: string } }[];
  };
  // esbuild (inside tsx) reports parse errors as a list with locations.
  const first = e.errors?.[0];
  if (first) {
    return {
      kind: 'syntax',
      file: first.location?.file ? resolve(first.location.file) : path,
      message: first.text,
      line: first.location?.line,
      column: first.location?.column === undefined ? undefined : first.location.column + 1,
    };
  }
  const message = String(e.message ?? error);
  const transform =
    /^(?:Transform failed with \d+ errors?:\n)?(.+?):(\d+):(\d+): ERROR: (.+)$/m.exec(message);
  if (transform) {
    return {
      kind: 'syntax',
      file: stripQuery(transform[1]),
      message: transform[4],
      line: Number(transform[2]),
      column: Number(transform[3]) + 1,
    };
  }
  // A ConfigurationError from defineOutbox. Matched by its code, not `instanceof`: the
  // config imports outboxkit through tsx, which may be another instance of the module.
  if (e.code === 'OUTBOX_CONFIGURATION') {
    return {
      kind: 'invalid',
      file: path,
      message,
      line: lineOfConfigPath(path, e.path),
    };
  }
  const frame = configFrame(e.stack, path);
  return {
    kind: 'import',
    file: path,
    message: message
      .split('\n')
      .filter((l) => !/^Require stack:|^- /.test(l))
      .map(stripQuery)
      .slice(0, 6)
      .join('\n'),
    line: frame?.line,
    column: frame?.column,
  };
}

/** tsx loads each config under a `?namespace=…` query; people should not see it. */
function stripQuery(text: string): string {
  return text.replace(/\?namespace=[\w-]+/g, '');
}

/** The config file's own frame in a stack, if the error came from its top level. */
function configFrame(
  stack: string | undefined,
  path: string,
): { line: number; column: number } | undefined {
  for (const raw of (stack ?? '').split('\n')) {
    const line = stripQuery(raw);
    const name = [pathToFileURL(path).href, path].find((n) => line.includes(n));
    if (name === undefined) continue;
    const match = /^:(\d+):(\d+)/.exec(line.slice(line.lastIndexOf(name) + name.length));
    if (match) return { line: Number(match[1]), column: Number(match[2]) };
  }
  return undefined;
}

/**
 * The line of the declaration a config path names (`receivers["billing.charge"].maxAttempts`):
 * the first line quoting the outermost key, then the first line after it naming each inner
 * one. A text search, so it can miss (a key built at run time); then the error has no line.
 */
export function lineOfConfigPath(file: string, configPath: string | undefined): number | undefined {
  if (!configPath) return undefined;
  let lines: string[];
  try {
    lines = readFileSync(file, 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const parts = [...configPath.matchAll(/\["((?:[^"\\]|\\.)*)"\]|([A-Za-z_$][\w$]*)/g)].map(
    (m) => (m[1] === undefined ? m[2] : JSON.parse(`"${m[1]}"`)) as string,
  );
  // The section names (events, receivers, settings) are the least specific; skip them when
  // a key follows, since a key is what identifies the declaration.
  let from = 0;
  let found: number | undefined;
  for (const [i, part] of parts.entries()) {
    if (i === 0 && parts.length > 1) continue;
    const escaped = part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const pattern =
      i === 1 || parts.length === 1
        ? new RegExp(`(['"\`])${escaped}\\1\\s*:|\\b${escaped}\\s*:`)
        : new RegExp(`\\b${escaped}\\b`);
    const at = lines.findIndex((l, n) => n >= from && pattern.test(l));
    if (at < 0) break;
    found = at + 1;
    from = at;
  }
  return found;
}

/** Render a load error the way the CLI prints it: `file:line:column: what` and a message. */
export function formatLoadError(error: ConfigLoadError): string {
  const where =
    error.line === undefined
      ? error.file
      : `${error.file}:${error.line}${error.column === undefined ? '' : `:${error.column}`}`;
  const label = {
    missing: 'config not found',
    syntax: 'syntax error',
    invalid: 'invalid config',
    import: 'config failed to load',
  }[error.kind];
  return `outbox: ${label} at ${where}\n${error.message}`;
}
