import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CATALOGUE_TOOLCHAIN } from '../../catalogue/toolchain.js';
import { TOOLCHAIN } from '../../codegen/toolchain.js';
import { TSX_RANGE } from '../../src/declare/load-config.js';
import { lowestOf, manifest, REPO } from './support/tarball.js';

/**
 * package.json as an app's install sees it. The libraries the app owns (Sequelize, zod)
 * and the drivers it picks (pg, sqlite3) are peers, so the app's copy is the only copy;
 * the repo's own tests get them from devDependencies, at exact versions inside the ranges.
 * tarball.test.ts installs the lowest version of each required peer range and runs it.
 */
describe('package.json', () => {
  const { dependencies, devDependencies, peerDependencies, peerDependenciesMeta } = manifest;

  it('sequelize and zod are required peers, pg and sqlite3 optional ones, none of them a dependency', () => {
    expect(peerDependencies).toMatchObject({
      sequelize: '^6.21.0',
      zod: '^4.0.0',
      pg: '^8.7.1',
      sqlite3: '^5.1.6 || ^6.0.0',
    });
    for (const name of ['sequelize', 'zod']) expect(peerDependenciesMeta[name]).toBeUndefined();
    for (const name of ['pg', 'sqlite3'])
      expect(peerDependenciesMeta[name]).toEqual({ optional: true });
    for (const name of ['sequelize', 'zod', 'pg', 'sqlite3', 'pg-hstore']) {
      expect(dependencies[name], `${name} in dependencies`).toBeUndefined();
    }
  });

  it('the runtime depends on what it runs: the CLI (commander, its progress bar) and uuid v7, nothing else', () => {
    // Not the codegen/catalogue toolchain (optional peers below), nor any @types package:
    // the .d.ts files must not need one (tarball.test.ts checks them with skipLibCheck off).
    expect(Object.keys(dependencies).sort()).toEqual(['cli-progress', 'commander', 'uuid']);
  });

  it('the toolchain — ts-morph, handlebars, tsx, yaml — is optional peers, whose ranges the install hints ask for', () => {
    const hints: Record<string, string> = { ...TOOLCHAIN, ...CATALOGUE_TOOLCHAIN, tsx: TSX_RANGE };
    expect(Object.keys(hints).sort()).toEqual(['handlebars', 'ts-morph', 'tsx', 'yaml']);
    for (const [name, hint] of Object.entries(hints)) {
      expect(peerDependenciesMeta[name], name).toEqual({ optional: true });
      expect(dependencies[name], `${name} in dependencies`).toBeUndefined();
      // The hint (`^28`) asks for the peer range's major (`^28.0.0`).
      expect(`^${lowestOf(peerDependencies[name]).split('.')[0]}`, name).toBe(hint);
    }
  });

  it('builds when packed (prepack), never when installed: no prepare or install script', () => {
    const { scripts } = manifest;
    expect(scripts.prepack).toBe('npm run build');
    for (const name of ['prepare', 'preinstall', 'install', 'postinstall']) {
      expect(scripts[name], name).toBeUndefined();
    }
  });

  it('every peer is also a devDependency at an exact version its range admits', () => {
    for (const [name, range] of Object.entries(peerDependencies)) {
      const dev = devDependencies[name];
      if (range.startsWith('>=')) {
        expect(dev, `${name} in devDependencies`).toBeDefined();
        continue;
      }
      expect(dev, `${name} in devDependencies`).toMatch(/^\d+\.\d+\.\d+$/);
      const admitted = range.split('||').some((part) => {
        const low = lowestOf(part.trim()).split('.').map(Number);
        const have = dev.split('.').map(Number);
        return (
          have[0] === low[0] && (have[1] > low[1] || (have[1] === low[1] && have[2] >= low[2]))
        );
      });
      expect(admitted, `${name}@${dev} within ${range}`).toBe(true);
    }
  });

  it('every export has its types first and a default condition, so require() finds it too', () => {
    for (const [key, entry] of Object.entries(manifest.exports)) {
      if (typeof entry === 'string') continue;
      expect(Object.keys(entry), key).toEqual(['types', 'default']);
    }
  });

  it('asks for the Node that can require() it: 20.19, where require(esm) is unflagged', () => {
    expect(manifest.engines).toEqual({ node: '>=20.19' });
  });

  it('ships dist, bin, the LICENSE and the README', () => {
    expect(manifest.files).toEqual(['dist', 'bin', 'LICENSE', 'README.md']);
    expect(existsSync(join(REPO, 'LICENSE'))).toBe(true);
  });
});
