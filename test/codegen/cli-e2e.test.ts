import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../cli/support/in-process.js';
import { builtPackage } from '../packaging/support/build.js';
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
 * Type-check the project as `tsc -p .` does, through the compiler's API: its diagnostics in
 * tsc's own format (`file(line,col): error TSxxxx: …`, paths relative to the project).
 */
function typecheck(dir: string): { errors: number; output: string } {
  const config = ts.getParsedCommandLineOfConfigFile(join(dir, 'tsconfig.json'), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  });
  if (!config) throw new Error(`${dir}/tsconfig.json could not be read`);
  const program = ts.createProgram({ rootNames: config.fileNames, options: config.options });
  const diagnostics = ts.getPreEmitDiagnostics(program);
  const output = ts.formatDiagnostics(diagnostics, {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => dir,
    getNewLine: () => '\n',
  });
  return { errors: diagnostics.length, output };
}

/**
 * A user's project, outside the repository, with outboxkit installed: node_modules/outboxkit
 * is the package built from the current sources (test/packaging/support/build.ts: in CI the
 * build `npm ci` made, else compiled once per content), linked as npm links a `file:`
 * dependency, with its `outbox` bin in node_modules/.bin. (tarball.test.ts installs the
 * packed tarball with npm itself.) One test runs `npx outbox codegen` as a process, for its
 * exit codes and output; the others run the same command line in-process (`main(argv, io)`
 * of cli/main.ts, through test/cli/support/in-process.ts), in the project's directory.
 */
describe('npx outbox codegen and catalogue diff in a project that installs outboxkit', {
  timeout: 120_000,
}, () => {
  let dir: string;
  const outbox = (...args: string[]) => runCliInProcess(args, { cwd: dir, timeoutMs: 60_000 });
  const npxOutbox = (...args: string[]) => sh(dir, 'npx', ['--no', 'outbox', ...args]);
  const write = (name: string, text: string) => writeFileSync(join(dir, name), text);
  const read = (name: string) => readFileSync(join(dir, name), 'utf8');
  const git = (...args: string[]) =>
    sh(dir, 'git', ['-c', 'user.email=ci@example.com', '-c', 'user.name=ci', ...args]);

  beforeAll(async () => {
    const pkg = builtPackage();
    dir = mkdtempSync(join(tmpdir(), 'outbox-e2e-'));
    write('package.json', JSON.stringify({ name: 'shop', private: true, type: 'module' }));
    write('.gitignore', 'node_modules\n');
    mkdirSync(join(dir, 'node_modules/.bin'), { recursive: true });
    symlinkSync(pkg, join(dir, 'node_modules/outboxkit'), 'dir');
    symlinkSync(join(REPO, 'node_modules/zod'), join(dir, 'node_modules/zod'), 'dir');
    symlinkSync('../outboxkit/bin/outbox.js', join(dir, 'node_modules/.bin/outbox'));
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
    mkdirSync(join(dir, 'src'));
    write('src/handlers.ts', HANDLERS);
    write('outbox.config.ts', CONFIG('orderId: z.string(), totalCents: z.number().int()'));
    await git('init', '-q');
  }, 300_000); // a build of the package, when this content has none yet
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('codegen writes typed emitters and the catalogue, and --check then passes (as processes: npx outbox)', async () => {
    const first = await npxOutbox('codegen');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('wrote src/outbox.generated.ts');
    expect(read('src/outbox.generated.ts')).toContain("from 'outboxkit';");
    expect(read('src/outbox.generated.ts')).toContain(
      "import type config from '../outbox.config.js';",
    );
    const catalogue = JSON.parse(read('catalogue/catalogue.json'));
    expect(catalogue.events[0].receivers[0].location).toBe('src/handlers.ts:3');
    expect(read('catalogue/catalogue.md')).toMatch(/`mail\.receipt`.*`src\/handlers\.ts:3`/);

    const check = await npxOutbox('codegen', '--check');
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain('up to date');
  });

  it("the user's code compiles against the generated file, and a wrong payload does not", async () => {
    write('src/app.ts', APP);
    // What the user runs: tsc itself, once.
    const tsc = [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', '.'];
    const good = await sh(dir, process.execPath, tsc);
    expect(good.stdout + good.stderr).toBe('');
    expect(good.code).toBe(0);

    // The same check through the compiler's API, which reports what tsc would print.
    write('src/app.ts', APP.replace("orderId: 'o-1'", 'orderId: 1'));
    const bad = typecheck(dir);
    expect(bad.errors).not.toBe(0);
    expect(bad.output).toContain(
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
