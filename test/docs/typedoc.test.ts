/**
 * The docs site builds as `npm run docs` builds it (typedoc.json), into a temp folder, with
 * not one warning: TypeDoc's validation is on (`invalidLink`, `notExported`,
 * `notDocumented`) and typedoc.json makes every warning an error, so a broken `{@link}`, an
 * undocumented exported name or a guide linking a missing file fails this test. The site's
 * pages are the README, every docs/*.md guide and one module per export of package.json.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { documents, ROOT } from './support/markdown.js';

const run = promisify(execFile);
const out = mkdtempSync(join(tmpdir(), 'outboxkit-docs-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('the docs site (npm run docs)', () => {
  it('builds with TypeDoc validation on and no warning', async () => {
    const typedoc = join(ROOT, 'node_modules', 'typedoc', 'bin', 'typedoc');
    const { stdout, stderr } = await run(
      process.execPath,
      [typedoc, '--out', join(out, 'site'), '--json', join(out, 'api.json')],
      { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 },
    ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`typedoc failed:\n${error.stdout ?? ''}${error.stderr ?? error.message}`);
    });
    // biome-ignore lint/suspicious/noControlCharactersInRegex: TypeDoc colours its log
    const log = `${stdout}${stderr}`.replace(/\u001b\[[0-9;]*m/g, '');
    expect(log.split('\n').filter((l) => /\[(warning|error)\]/.test(l))).toEqual([]);
  }, 180_000);

  it('has a module per export of package.json and a page per guide', () => {
    const api = JSON.parse(readFileSync(join(out, 'api.json'), 'utf8')) as {
      children?: { name: string }[];
      documents?: { name: string }[];
    };
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      exports: Record<string, unknown>;
    };
    const entries = Object.keys(pkg.exports).filter((e) => e !== './package.json');
    expect(api.children?.length).toBe(entries.length);
    const guides = documents().filter((d) => d !== 'README.md');
    expect(api.documents?.length).toBe(guides.length);
    expect(existsSync(join(out, 'site', 'index.html'))).toBe(true);
  });
});
