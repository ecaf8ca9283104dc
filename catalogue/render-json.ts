import type { Catalogue } from '../src/introspect/index.js';

/**
 * Render a catalogue as JSON: two-space indented, keys in the order the catalogue types
 * declare them, ending in exactly one newline.
 *
 * JSON is what a pipeline diffs (`npx outbox catalogue diff`) to fail a pull request that
 * removes a field other teams consume; the final newline is there because the file is
 * committed, and a file without one reports a change on its last line forever.
 */
export function renderCatalogueJson(catalogue: Catalogue): string {
  return `${JSON.stringify(catalogue, null, 2)}\n`;
}
