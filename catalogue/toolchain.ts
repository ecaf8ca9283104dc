/**
 * The catalogue's document toolchain — handlebars (the catalogue's Markdown, which codegen
 * writes) and yaml (the AsyncAPI document's YAML form) — loaded when a document is first
 * rendered, never when the module is imported.
 *
 * Why optional peers, not dependencies: these documents are written in development and CI,
 * never by a production process (the relay, migrate, `fire()`), so an app installs them as
 * devDependencies and a production install carries none of them. Loaded with `require`
 * (both are CommonJS-loadable), so rendering stays a plain synchronous function.
 */
import { createRequire } from 'node:module';
import type Handlebars from 'handlebars';
import type * as Yaml from 'yaml';
import { ConfigurationError } from '../src/errors/outbox-error.js';

/**
 * The ranges the catalogue is written against: the major of each range in package.json
 * `peerDependencies` (test/packaging/manifest.test.ts holds them together).
 */
export const CATALOGUE_TOOLCHAIN = { handlebars: '^4', yaml: '^2' } as const;

const require = createRequire(import.meta.url);
const loaded = new Map<string, unknown>();

/** `require(name)`, or a ConfigurationError naming it when it is not installed. */
function load<T>(name: keyof typeof CATALOGUE_TOOLCHAIN, neededFor: string, orElse = ''): T {
  if (loaded.has(name)) return loaded.get(name) as T;
  let module: T;
  try {
    module = require(name) as T;
  } catch (error) {
    const e = error as { code?: unknown; message?: unknown } | null;
    // Only the package itself missing; a broken install of it says so in its own words.
    if (e?.code === 'MODULE_NOT_FOUND' && String(e.message).includes(`'${name}'`)) {
      throw new ConfigurationError(
        `${neededFor} needs ${name}, which is not installed: npm install --save-dev ${name}@${CATALOGUE_TOOLCHAIN[name]}${orElse}`,
        { cause: error },
      );
    }
    throw error;
  }
  loaded.set(name, module);
  return module;
}

/**
 * handlebars, for the catalogue's Markdown.
 *
 * @throws {ConfigurationError} when handlebars is not installed, saying how to install it.
 */
export function loadHandlebars(): typeof Handlebars {
  return load('handlebars', "the catalogue's Markdown (npx outbox codegen)");
}

/**
 * yaml, for the AsyncAPI document's YAML form.
 *
 * @throws {ConfigurationError} when yaml is not installed, saying how to install it (or to
 *   ask for the JSON form, which needs nothing).
 */
export function loadYaml(): typeof Yaml {
  return load('yaml', "the AsyncAPI document's YAML form", ', or pass --format json');
}
