import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Sequelize } from 'sequelize';
import { isOutboxConfig, type OutboxConfig } from '../declare/define-outbox.js';
import { ConfigurationError } from '../errors/outbox-error.js';

/** The default config file name, looked up in the working directory. */
export const DEFAULT_CONFIG_FILE = 'outbox.config.ts';

/** A config file loaded: the config, and what else the module exported for the CLI. */
export interface LoadedConfig {
  readonly file: string;
  readonly config: OutboxConfig;
  /** A Sequelize instance the module exports as `sequelize`, if any. */
  readonly sequelize: Sequelize | undefined;
  /** The module's other named exports. */
  readonly module: Record<string, unknown>;
}

/** Why a config could not be loaded, as data the CLI prints (never a stack trace). */
export type ConfigLoadError =
  | { readonly kind: 'missing'; readonly file: string; readonly message: string }
  | { readonly kind: 'syntax'; readonly file: string; readonly message: string; readonly line?: number; readonly column?: number }
  | { readonly kind: 'invalid'; readonly file: string; readonly message: string }
  | { readonly kind: 'import'; readonly file: string; readonly message: string };

/** The result of {@link loadConfig}: a config or a tagged error, never a throw. */
export type LoadConfigResult = { readonly ok: true; readonly value: LoadedConfig } | { readonly ok: false; readonly error: ConfigLoadError };

/**
 * Find and load `outbox.config.ts` (or `file`) through tsx, and check that its default
 * export is a `defineOutbox(...)` result. Never throws: a missing file, a syntax error (with
 * its position) or an invalid config comes back as a tagged error for the CLI to print.
 */
export async function loadConfig(file: string | undefined, cwd = process.cwd()): Promise<LoadConfigResult> {
  const path = resolve(cwd, file ?? DEFAULT_CONFIG_FILE);
  if (!existsSync(path)) {
    return {
      ok: false,
      error: {
        kind: 'missing',
        file: path,
        message: `no config at ${path}; create ${DEFAULT_CONFIG_FILE} (export default defineOutbox({ events, receivers })) or pass --config`,
      },
    };
  }
  let mod: Record<string, unknown>;
  try {
    const { tsImport } = await import('tsx/esm/api');
    mod = (await tsImport(pathToFileURL(path).href, import.meta.url)) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof ConfigurationError) return { ok: false, error: { kind: 'invalid', file: path, message: error.message } };
    const e = error as Error & { errors?: { text: string; location?: { line: number; column: number; file: string } }[] };
    const first = e.errors?.[0];
    if (first) {
      return {
        ok: false,
        error: { kind: 'syntax', file: path, message: first.text, line: first.location?.line, column: first.location?.column },
      };
    }
    const syntax = /SyntaxError|Transform failed|Expected/.test(`${e.name} ${e.message}`);
    return { ok: false, error: { kind: syntax ? 'syntax' : 'import', file: path, message: e.message.split('\n').slice(0, 6).join('\n') } };
  }
  const config = (mod.default as { default?: unknown } | undefined)?.default ?? mod.default ?? mod.config;
  if (!isOutboxConfig(config)) {
    return {
      ok: false,
      error: { kind: 'invalid', file: path, message: `${path} must export default defineOutbox({ ... }) (found ${typeof config})` },
    };
  }
  const sequelize = mod.sequelize as Sequelize | undefined;
  return { ok: true, value: { file: path, config, sequelize, module: mod } };
}

/** Render a load error the way the CLI prints it: `file:line:column message`. */
export function formatLoadError(error: ConfigLoadError): string {
  const where = error.kind === 'syntax' && error.line !== undefined ? `${error.file}:${error.line}:${error.column ?? 0}` : error.file;
  const label = { missing: 'config not found', syntax: 'syntax error', invalid: 'invalid config', import: 'config failed to load' }[error.kind];
  return `outbox: ${label} in ${where}\n${error.message}`;
}
