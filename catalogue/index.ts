/**
 * `outboxkit/catalogue`: the catalogue's renderers, for a script or a docs build of the
 * app's own (`npx outbox codegen` writes the same files).
 *
 * A subpath rather than the package root: `import 'outboxkit'` loads no document
 * toolchain, and src/ never imports catalogue/ (test/packaging/import-graph.test.ts).
 * Importing this entry loads no handlebars either: {@link renderCatalogueMarkdown}
 * requires it on its first call (an optional peer; a ConfigurationError says how to
 * install it), and {@link renderCatalogueJson} needs nothing.
 *
 * @example
 * ```ts
 * import { renderCatalogueJson, renderCatalogueMarkdown } from 'outboxkit/catalogue';
 * const catalogue = outbox.catalogue();
 * await writeFile('docs/events.md', renderCatalogueMarkdown(catalogue));
 * ```
 * @packageDocumentation
 * @module outboxkit/catalogue
 */

export type {
  Catalogue,
  CatalogueEvent,
  CatalogueEventColumn,
  CatalogueField,
  CatalogueReceiver,
} from '../src/introspect/index.js';
export { renderCatalogueJson } from './render-json.js';
export { renderCatalogueMarkdown } from './render-markdown.js';
