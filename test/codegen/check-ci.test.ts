import { cpSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type CodegenOptions, runCodegen } from '../../codegen/run-codegen.js';
import { commitAll, git, tempDir, writeFiles } from './git-repos.js';
import { REPO } from './support.js';

/** A user's config: one event, one receiver; `fields` is the payload's zod shape. */
const config = (dir: string, fields: string) => {
  let runtime = relative(dir, join(REPO, 'src/index.js'));
  if (!runtime.startsWith('.')) runtime = `./${runtime}`;
  return `import { z } from 'zod';
import { defineOutbox, event, receiver } from '${runtime}';

export const OrderPlaced = event({ schema: z.object({ ${fields} }) });

export default defineOutbox({
  events: { 'shop.OrderPlaced': OrderPlaced },
  receivers: {
    'mail.receipt': receiver(OrderPlaced, { handle: async () => {} }),
  },
});
`;
};

const FIRST = 'orderId: z.string(), totalCents: z.number().int()';
const BROKEN = 'orderId: z.string()'; // totalCents removed: breaking
const EXTENDED = `${FIRST}, coupon: z.string().optional()`; // an optional field: compatible

/** A working copy of the project: the config, and the repository's node_modules (for zod). */
function project(dir: string, fields: string) {
  writeFiles(dir, { 'outbox.config.ts': config(dir, fields), '.gitignore': 'node_modules\n' });
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'), 'dir');
}

/** `outbox codegen` in-process, with no CI variables; stdout and stderr collected apart. */
async function codegen(cwd: string, options: CodegenOptions = {}) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await runCodegen(
    { cwd, env: {}, ...options },
    { log: (t) => stdout.push(t), error: (t) => stderr.push(t) },
  );
  return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
}

const short = (sha: string) => sha.slice(0, 7);

/**
 * Each distinct config is analysed once for the file. The source analysis (receiver
 * locations and handler types: a TypeScript program per run, seconds each) is tested by
 * fixtures.test.ts; here it is a function of the config's text alone, as these configs
 * import nothing of their project (no handlers module, no models), and the tests are about
 * the base the check finds in git, which each clone and check still resolves itself. So the
 * same config in another clone, or checked again, reuses its analysis.
 */
vi.mock('../../codegen/analyze.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../codegen/analyze.js')>();
  const { readFileSync } = await import('node:fs');
  const { relative } = await import('node:path');
  const analyses = new Map<string, ReturnType<typeof actual.analyzeConfig>>();
  return {
    ...actual,
    analyzeConfig(...args: Parameters<typeof actual.analyzeConfig>) {
      const [configFile, projectRoot, , at] = args;
      const key = JSON.stringify([
        relative(projectRoot, configFile),
        readFileSync(configFile, 'utf8'),
        at && [relative(projectRoot, at.file), at.runtimeImport],
      ]);
      const known = analyses.get(key);
      if (known) return known;
      const analysis = actual.analyzeConfig(...args);
      // A captured model's type is found by its absolute path: not the same in another clone.
      if (analysis.captureModels.size === 0) analyses.set(key, analysis);
      return analysis;
    },
  };
});

/**
 * The CI case of issue 17: a breaking change regenerated and committed on a branch, so the
 * generated files are up to date and only a comparison with the branch's base catches it.
 * An `origin` (a bare repository) has `main` with the first catalogue; each case checks
 * out a clone of it.
 */
describe('codegen --check in CI finds its base in git', { timeout: 60_000 }, () => {
  const { dir: root, cleanup } = tempDir('outbox-check-ci-');
  const origin = join(root, 'origin.git');
  let first: string;

  /** A clone of origin on a new branch from main, with `fields` generated and committed. */
  async function branch(name: string, fields: string) {
    const dir = join(root, name);
    git(root, 'clone', '-q', origin, dir);
    git(dir, 'checkout', '-q', '-b', name);
    project(dir, fields);
    const written = await codegen(dir);
    expect(written.code, written.stderr).toBe(0);
    commitAll(dir, `${name}: regenerate`);
    return dir;
  }

  beforeAll(async () => {
    const seed = join(root, 'seed');
    git(root, 'init', '-q', '--bare', origin);
    git(root, 'init', '-q', seed);
    project(seed, FIRST);
    const written = await codegen(seed);
    expect(written.code, written.stderr).toBe(0);
    first = commitAll(seed, 'first catalogue');
    git(seed, 'remote', 'add', 'origin', origin);
    git(seed, 'push', '-q', 'origin', 'HEAD:refs/heads/main');
  }, 60_000);
  afterAll(() => {
    vi.unstubAllEnvs();
    cleanup();
  });

  it('on a branch, fails on a breaking change committed there, naming the merge-base it compared with', async () => {
    const dir = await branch('break', BROKEN);
    const check = await codegen(dir, { check: true });
    expect(check.code).toBe(1);
    expect(check.stdout).toContain(
      `outbox codegen --check: comparing the catalogue with the merge-base of HEAD and origin/main (${short(first)})`,
    );
    expect(check.stderr).toContain('✗ shop.OrderPlaced: field totalCents removed');
    expect(check.stderr).toContain(
      `the catalogue has 1 breaking change(s) since the merge-base of HEAD and origin/main (${short(first)}); bump the event's version`,
    );
    expect(check.stderr).not.toContain('stale');

    const allowed = await codegen(dir, { check: true, allowBreaking: true });
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout).toContain(
      `generated files are up to date; the catalogue's 1 breaking change(s) since the merge-base of HEAD and origin/main (${short(first)}) are allowed by --allow-breaking`,
    );
    git(dir, 'push', '-q', 'origin', 'break');
  });

  it('on a branch, passes a compatible change and lists it', async () => {
    const dir = await branch('extend', EXTENDED);
    const check = await codegen(dir, { check: true });
    expect(check.stderr).toBe('');
    expect(check.code).toBe(0);
    expect(check.stdout).toContain('✓ shop.OrderPlaced: optional field coupon added');
    expect(check.stdout).toContain(
      `outbox codegen --check: generated files are up to date, and the catalogue has no breaking change since the merge-base of HEAD and origin/main (${short(first)})`,
    );
  });

  it('on main after the break is merged, compares with the previous commit and fails', async () => {
    const dir = join(root, 'main');
    git(root, 'clone', '-q', origin, dir);
    git(dir, 'merge', '-q', '--no-ff', '--no-edit', 'origin/break');
    git(dir, 'push', '-q', 'origin', 'main');
    symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'), 'dir');
    const check = await codegen(dir, { check: true });
    expect(check.code).toBe(1);
    expect(check.stdout).toContain(
      `comparing the catalogue with the previous commit HEAD~1 (${short(first)}), as HEAD is on origin/main`,
    );
    expect(check.stderr).toContain('✗ shop.OrderPlaced: field totalCents removed');
  });

  it('without git, says plainly that no base was found and what it checked, and passes', async () => {
    const dir = join(root, 'no-git', 'project');
    cpSync(join(root, 'seed'), dir, {
      recursive: true,
      filter: (src) => !/[/\\](\.git|node_modules)$/.test(src),
    });
    project(dir, FIRST); // the config's import of outboxkit is relative to where it is
    vi.stubEnv('GIT_CEILING_DIRECTORIES', join(root, 'no-git'));
    const check = await codegen(dir, { check: true });
    expect(check.stderr).toBe(
      'outbox codegen --check: no base to compare the catalogue with: not a git checkout. Only checked that the generated files match the config; a breaking change already committed is not caught.',
    );
    expect(check.code).toBe(0);
    expect(check.stdout).toBe(
      'outbox codegen --check: generated files are up to date (the catalogue was not compared with a base)',
    );
  });

  it('a base that predates the catalogue passes: every event in it is new', async () => {
    const dir = join(root, 'adopt');
    git(root, 'init', '-q', dir);
    writeFiles(dir, { 'README.md': 'an app before outboxkit\n' });
    const before = commitAll(dir, 'before outboxkit');
    for (const generated of ['src', 'catalogue']) {
      cpSync(join(root, 'seed', generated), join(dir, generated), { recursive: true });
    }
    project(dir, FIRST);
    commitAll(dir, 'adopt outboxkit');
    const check = await codegen(dir, { check: true, base: before });
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain(
      `outbox codegen --check: ${short(before)}:./catalogue/catalogue.json does not exist: the catalogue is new since the base, so nothing in it can break`,
    );
  });
});
