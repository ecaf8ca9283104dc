/**
 * The codegen toolchain — ts-morph (codegen reads the config and writes the emitters with
 * it) and handlebars (the catalogue's Markdown) — found before codegen loads.
 *
 * Why optional peers, not dependencies: they run where codegen runs, in development and CI,
 * and never in production, where they would be most of the install (ts-morph alone is 13 MB,
 * with a TypeScript of its own). An app installs them as devDependencies; outboxkit's
 * package.json lists them as optional peers so npm checks their versions and never installs
 * them on its own. Why found up front: codegen imports them statically, and a static import
 * of a missing package fails while Node links the module graph, with an
 * `ERR_MODULE_NOT_FOUND` pointing inside outboxkit — not a message a user can act on. So
 * {@link loadCodegen} resolves each first, and names every one that is missing, with the
 * command that installs them.
 */
import { ConfigurationError } from '../src/errors/outbox-error.js';

/**
 * Each package of the toolchain and the range outboxkit is written against: the major of
 * its range in package.json `peerDependencies` (test/packaging/manifest.test.ts holds the
 * two together).
 */
export const TOOLCHAIN = {
  'ts-morph': '^28',
  handlebars: '^4',
} as const;

/** A package of the codegen toolchain. */
export type ToolchainPackage = keyof typeof TOOLCHAIN;

/**
 * The packages of `names` that do not resolve from outboxkit's own location — where its
 * imports of them would look, so the app's node_modules (or a workspace's above it).
 */
export function missingToolchain(
  names: readonly ToolchainPackage[] = Object.keys(TOOLCHAIN) as ToolchainPackage[],
): ToolchainPackage[] {
  return names.filter((name) => {
    try {
      import.meta.resolve(name);
      return false;
    } catch {
      return true;
    }
  });
}

/**
 * Refuse with what to install when a package `command` needs is missing.
 *
 * @throws {ConfigurationError} naming each missing package and the `npm install` that adds
 *   them, e.g. `npx outbox codegen needs ts-morph, which is not installed: npm install
 *   --save-dev ts-morph@^28`.
 */
export function requireToolchain(command: string, names: readonly ToolchainPackage[]): void {
  const missing = missingToolchain(names);
  if (missing.length === 0) return;
  const list =
    missing.length === 1 ? missing[0] : `${missing.slice(0, -1).join(', ')} and ${missing.at(-1)}`;
  throw new ConfigurationError(
    `${command} needs ${list}, which ${missing.length === 1 ? 'is' : 'are'} not installed: npm install --save-dev ${missing.map((n) => `${n}@${TOOLCHAIN[n]}`).join(' ')}`,
  );
}

/**
 * Codegen's entry module, once its toolchain is found (see the module comment): what
 * `npx outbox codegen` runs.
 *
 * @throws {ConfigurationError} when ts-morph or handlebars is not installed.
 */
export async function loadCodegen(): Promise<typeof import('./run-codegen.js')> {
  requireToolchain('npx outbox codegen', ['ts-morph', 'handlebars']);
  return import('./run-codegen.js');
}
