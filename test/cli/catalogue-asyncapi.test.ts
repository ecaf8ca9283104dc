import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { renderAsyncApi } from '../../catalogue/asyncapi.js';
import { parseCatalogue } from '../../catalogue/read-catalogue.js';
import { PING_CONFIG, REPO } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

/**
 * `npx outbox catalogue asyncapi`, as users run it: in the project's directory, its
 * document on stdout. In-process; bin.test.ts runs the compiled bin once.
 */
describe('outbox catalogue asyncapi', () => {
  const dir = mkdtempSync(join(tmpdir(), 'outbox-asyncapi-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("prints the YAML document of catalogue/catalogue.json, titled by the project's package.json", async () => {
    const result = await runCliInProcess(['catalogue', 'asyncapi']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
    };
    const file = join(REPO, 'catalogue/catalogue.json');
    const catalogue = parseCatalogue(readFileSync(file, 'utf8'), file);
    expect(result.stdout).toBe(
      renderAsyncApi(catalogue, { title: pkg.name, version: pkg.version }),
    );
    expect(result.stdout.startsWith('asyncapi: 3.0.0\n')).toBe(true);
  });

  it('--config builds the catalogue from a config; --format json, --title and --api-version set the rest', async () => {
    const result = await runCliInProcess([
      'catalogue',
      'asyncapi',
      '--config',
      PING_CONFIG,
      '--format',
      'json',
      '--title',
      'Ping service',
      '--api-version',
      '2.0.0',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const doc = JSON.parse(result.stdout) as {
      info: { title: string; version: string };
      channels: Record<string, { address: string }>;
    };
    expect(doc.info).toMatchObject({ title: 'Ping service', version: '2.0.0' });
    expect(Object.values(doc.channels).map((c) => c.address)).toContain('test.Ping');
  });

  it('reads a catalogue file named as its argument, from any directory', async () => {
    const file = join(dir, 'old.json');
    writeFileSync(file, readFileSync(join(REPO, 'catalogue/catalogue.json')));
    const result = await runCliInProcess(['catalogue', 'asyncapi', file, '--title', 'T'], {
      cwd: dir,
    });
    expect(result.code).toBe(0);
    const doc = parseYaml(result.stdout) as { info: { title: string; version: string } };
    // No package.json at or above a temporary directory: the version falls back.
    expect(doc.info).toMatchObject({ title: 'T', version: '0.0.0' });
  });

  it('refuses a bad --format, a file and --config together, a missing catalogue, a config that does not load, an option of the other action and an unknown action, naming them', async () => {
    const format = await runCliInProcess(['catalogue', 'asyncapi', '--format', 'xml']);
    expect(format.code).toBe(1);
    expect(format.stderr).toContain('--format must be yaml or json (got "xml")');
    const both = await runCliInProcess([
      'catalogue',
      'asyncapi',
      'a.json',
      '--config',
      PING_CONFIG,
    ]);
    expect(both.code).toBe(1);
    expect(both.stderr).toContain('name a catalogue file or --config, not both');
    const missing = await runCliInProcess(['catalogue', 'asyncapi', join(dir, 'nope.json')], {
      cwd: dir,
    });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('is neither a file nor a catalogue in git');
    const typo = await runCliInProcess([
      'catalogue',
      'asyncapi',
      '-c',
      join(REPO, 'test/cli/fixtures/typo.config.ts'),
    ]);
    expect(typo.code).toBe(1);
    expect(typo.stdout).toBe('');
    expect(typo.stderr).toMatch(/^outbox: invalid config at .*typo\.config\.ts:11\n/);
    expect(typo.stderr).toContain('did you mean "maxAttempts"?');
    const stray = await runCliInProcess(['catalogue', 'asyncapi', '--allow-breaking']);
    expect(stray.code).toBe(1);
    expect(stray.stderr).toContain('--allow-breaking is not an option of asyncapi');
    const diffStray = await runCliInProcess(['catalogue', 'diff', 'HEAD', '--title', 'T']);
    expect(diffStray.code).toBe(2);
    expect(diffStray.stderr).toContain('--title is not an option of diff');
    const unknown = await runCliInProcess(['catalogue', 'openapi']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown action "openapi" (known: diff, asyncapi');
  });

  it('--help describes both actions and their options', async () => {
    const result = await runCliInProcess(['catalogue', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('asyncapi [FILE]');
    expect(result.stdout).toContain('--api-version <version>');
    expect(result.stdout).toContain('outbox catalogue asyncapi > asyncapi.yaml');
  });
});
