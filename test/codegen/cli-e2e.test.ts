import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from './support.js';

const run = promisify(execFile);

/** Run a command in the project; never throws, returns the exit code and output. */
async function sh(cwd: string, file: string, args: string[]) {
  try {
    const { stdout, stderr } = await run(file, args, { cwd, maxBuffer: 32 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

const CONFIG = (fields: string) => `import { z } from 'zod';
import { AnyEvent, defineOutbox, event, receiver } from 'outboxkit';
import { forward, sendReceipt } from './src/handlers.js';

export const OrderPlaced = event({ schema: z.object({ ${fields} }) });

export default defineOutbox({
  events: { 'shop.OrderPlaced': OrderPlaced },
  receivers: {
    'mail.receipt': receiver(OrderPlaced, { handle: sendReceipt }),
    'bridge.forward': receiver(AnyEvent, { deliver: forward }),
  },
});
`;

const HANDLERS = `import type { OutboxEvent } from 'outboxkit';

export async function sendReceipt(event: OutboxEvent<{ orderId: string }>): Promise<void> {
  void event.payload.orderId;
}

export async function forward(_event: OutboxEvent): Promise<void> {}
`;

const APP = `import type { Outbox } from 'outboxkit';
import type config from '../outbox.config.js';
import { createEmitters } from './outbox.generated.js';

export async function place(outbox: Outbox<typeof config>): Promise<void> {
  const emit = createEmitters(outbox);
  await emit.orderPlaced({ orderId: 'o-1', totalCents: 100 });
}
`;

/**
 * A user's project, outside the repository, that installs outboxkit from the repository
 * (a `file:` install, linked, from the npm cache only) and runs the installed `outbox` bin.
 */
describe('npx outbox codegen and catalogue diff in a project that installs outboxkit', {
  timeout: 120_000,
}, () => {
  let dir: string;
  const outbox = (...args: string[]) => sh(dir, join(dir, 'node_modules/.bin/outbox'), args);
  const write = (name: string, text: string) => writeFileSync(join(dir, name), text);
  const read = (name: string) => readFileSync(join(dir, name), 'utf8');
  const git = (...args: string[]) =>
    sh(dir, 'git', ['-c', 'user.email=ci@example.com', '-c', 'user.name=ci', ...args]);

  beforeAll(async () => {
    // The bin runs the compiled CLI: build it from the current sources.
    const build = await sh(REPO, process.execPath, [
      join(REPO, 'node_modules/typescript/bin/tsc'),
      '-p',
      'tsconfig.build.json',
    ]);
    if (!existsSync(join(REPO, 'dist/codegen/run-codegen.js'))) {
      throw new Error(`npm run build failed:\n${build.stdout}${build.stderr}`);
    }
    dir = mkdtempSync(join(tmpdir(), 'outbox-e2e-'));
    write('package.json', JSON.stringify({ name: 'shop', private: true, type: 'module' }));
    const install = await sh(dir, 'npm', [
      'install',
      '--offline',
      '--no-audit',
      '--no-fund',
      '--ignore-scripts',
      `file:${REPO}`,
      `file:${join(REPO, 'node_modules/zod')}`,
    ]);
    expect(install.code, install.stderr).toBe(0);
    write(
      'tsconfig.json',
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          skipLibCheck: true,
          noEmit: true,
          types: [],
        },
        include: ['outbox.config.ts', 'src'],
      }),
    );
    await sh(dir, 'mkdir', ['-p', 'src']);
    write('src/handlers.ts', HANDLERS);
    write('outbox.config.ts', CONFIG('orderId: z.string(), totalCents: z.number().int()'));
    await git('init', '-q');
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('codegen writes typed emitters and the catalogue, and --check then passes', async () => {
    const first = await outbox('codegen');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('wrote src/outbox.generated.ts');
    expect(read('src/outbox.generated.ts')).toContain("from 'outboxkit';");
    expect(read('src/outbox.generated.ts')).toContain(
      "import type config from '../outbox.config.js';",
    );
    const catalogue = JSON.parse(read('catalogue/catalogue.json'));
    expect(catalogue.events[0].receivers[0].location).toBe('src/handlers.ts:3');
    expect(read('catalogue/catalogue.md')).toMatch(/`mail\.receipt`.*`src\/handlers\.ts:3`/);

    const check = await outbox('codegen', '--check');
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain('up to date');
  });

  it("the user's code compiles against the generated file, and a wrong payload does not", async () => {
    write('src/app.ts', APP);
    const tsc = [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', '.'];
    const good = await sh(dir, process.execPath, tsc);
    expect(good.stdout + good.stderr).toBe('');
    expect(good.code).toBe(0);

    write('src/app.ts', APP.replace("orderId: 'o-1'", 'orderId: 1'));
    const bad = await sh(dir, process.execPath, tsc);
    expect(bad.code).not.toBe(0);
    expect(bad.stdout).toContain(
      "src/app.ts(7,28): error TS2322: Type 'number' is not assignable to type 'string'.",
    );
    write('src/app.ts', APP);
  });

  it('--check fails on a stale file with a readable diff and a breaking change, writing nothing', async () => {
    await git('add', '-A');
    await git('commit', '-qm', 'first');
    const before = read('src/outbox.generated.ts');
    write('outbox.config.ts', CONFIG('orderId: z.string()'));

    const check = await outbox('codegen', '--check');
    expect(check.code).toBe(1);
    expect(check.stderr).toContain('--- src/outbox.generated.ts (on disk)');
    expect(check.stderr).toContain('-  totalCents: number;');
    expect(check.stderr).toContain('✗ shop.OrderPlaced: field totalCents removed');
    expect(check.stderr).toContain('3 generated file(s) are stale');
    expect(read('src/outbox.generated.ts')).toBe(before);
  });

  it('catalogue diff against a git ref exits 1 on a breaking change, 0 with --allow-breaking, and speaks JSON', async () => {
    const regen = await outbox('codegen');
    expect(regen.code).toBe(0);
    expect(regen.stdout).toContain('field totalCents removed');

    const diff = await outbox('catalogue', 'diff', 'HEAD');
    expect(diff.code).toBe(1);
    expect(diff.stdout).toMatchInlineSnapshot(`
      "catalogue diff HEAD:./catalogue/catalogue.json → catalogue/catalogue.json
      breaking changes (1):
        ✗ shop.OrderPlaced: field totalCents removed
      compatible changes (0):
        none
      "
    `);

    const allowed = await outbox(
      'catalogue',
      'diff',
      'HEAD',
      'catalogue/catalogue.json',
      '--allow-breaking',
    );
    expect(allowed.code).toBe(0);

    const json = await outbox('catalogue', 'diff', 'HEAD', '--format', 'json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout).breaking).toEqual([
      {
        kind: 'field-removed',
        breaking: true,
        event: 'shop.OrderPlaced',
        subject: 'totalCents',
        message: 'shop.OrderPlaced: field totalCents removed',
      },
    ]);

    const missing = await outbox('catalogue', 'diff', 'no-such-ref');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no-such-ref is neither a file nor a catalogue in git');
  });

  it('--check on a branch fails on a breaking change already committed there, against the merge-base with origin/main', async () => {
    // The break of the previous tests, regenerated: committed on a branch off origin/main.
    const origin = mkdtempSync(join(tmpdir(), 'outbox-e2e-origin-'));
    try {
      await git('init', '-q', '--bare', origin);
      await git('remote', 'add', 'origin', origin);
      await git('push', '-q', 'origin', 'HEAD:refs/heads/main');
      await git('checkout', '-q', '-b', 'drop-total');
      await git('add', '-A');
      await git('commit', '-qm', 'drop totalCents');

      const check = await outbox('codegen', '--check');
      expect(check.code).toBe(1);
      expect(check.stdout).toMatch(
        /outbox codegen --check: comparing the catalogue with the merge-base of HEAD and origin\/main \([0-9a-f]{7}\)/,
      );
      expect(check.stderr).toContain('✗ shop.OrderPlaced: field totalCents removed');
      expect(check.stderr).not.toContain('stale');
    } finally {
      rmSync(origin, { recursive: true, force: true });
    }
  });

  it('a handler that cannot take its payload fails codegen with the receiver, event, types and location', async () => {
    write(
      'src/handlers.ts',
      HANDLERS.replace('OutboxEvent<{ orderId: string }>', 'OutboxEvent<{ orderId: number }>'),
    );
    const result = await outbox('codegen');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'src/handlers.ts:3: receivers["mail.receipt"] listens to shop.OrderPlaced, but its handler sendReceipt cannot take that payload',
    );
    expect(result.stderr).toContain('the handler takes a payload of type: { orderId: number; }');
    write('src/handlers.ts', HANDLERS);
  });
});
