import { createRequire } from 'node:module';
import type Handlebars from 'handlebars';
import { ConfigurationError } from '../src/errors/outbox-error.js';

/**
 * The range of handlebars the catalogue's template is written against: the major of its
 * range in package.json `peerDependencies` (test/packaging/manifest.test.ts holds them
 * together).
 */
export const HANDLEBARS_RANGE = '^4';

let loaded: typeof Handlebars | undefined;

/**
 * Load handlebars, an optional peer dependency, when the catalogue's Markdown is first
 * rendered. Why optional: the Markdown is written by codegen, in development and CI, never
 * in production, so an app installs handlebars as a devDependency and a production install
 * carries none of it. Synchronous (`require`, handlebars is CommonJS), so rendering stays a
 * plain function.
 *
 * @throws {ConfigurationError} when handlebars is not installed, saying how to install it.
 */
export function loadHandlebars(): typeof Handlebars {
  if (loaded) return loaded;
  try {
    loaded = createRequire(import.meta.url)('handlebars') as typeof Handlebars;
  } catch (error) {
    const e = error as { code?: unknown; message?: unknown } | null;
    // Only handlebars itself missing; a broken install of it says so in its own words.
    if (e?.code === 'MODULE_NOT_FOUND' && String(e.message).includes("'handlebars'")) {
      throw new ConfigurationError(
        `the catalogue's Markdown needs handlebars, which is not installed: npm install --save-dev handlebars@${HANDLEBARS_RANGE}`,
        { cause: error },
      );
    }
    throw error;
  }
  return loaded;
}
