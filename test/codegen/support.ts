import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The codegen fixture projects. */
export const FIXTURES = join(REPO, 'test/fixtures/codegen');
/** How fixture output imports outboxkit: from the sources, as nothing is installed there. */
export const SOURCE_IMPORT = '../../../../../src/index.js';
