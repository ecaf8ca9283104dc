import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../cli/main.js';
import { runCodegen } from '../../codegen/run-codegen.js';
import { FIXTURES, SOURCE_IMPORT } from './support.js';

const dir = mkdtempSync(join(tmpdir(), 'outbox-codegen-progress-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('codegen says what it is doing while it works', () => {
  it('prints progress lines with the elapsed time to output.progress, apart from log and error', async () => {
    const lines = { log: [] as string[], error: [] as string[], progress: [] as string[] };
    const code = await runCodegen(
      {
        cwd: join(FIXTURES, 'valid'),
        out: join(dir, 'outbox.generated.ts'),
        catalogueDir: dir,
        importFrom: SOURCE_IMPORT,
      },
      {
        log: (t) => void lines.log.push(t),
        error: (t) => void lines.error.push(t),
        progress: (t) => void lines.progress.push(t),
      },
    );
    expect(code).toBe(0);
    const steps = lines.progress.map((l) => l.replace(/ \(\d+\.\d s\)$/, ' (N s)'));
    expect(steps).toEqual([
      'outbox codegen: loading the config… (N s)',
      expect.stringMatching(
        /^outbox codegen: loaded outbox\.config\.ts: 2 event\(s\), 4 receiver\(s\); analysing its types .*… \(N s\)$/,
      ),
      'outbox codegen: analysed the types; generating the files… (N s)',
      expect.stringMatching(
        /^outbox codegen: writing .*outbox\.generated\.ts, .*catalogue\.json, .*catalogue\.md… \(N s\)$/,
      ),
      'outbox codegen: done (N s)',
    ]);
    // Progress is never mixed into the lines a script reads.
    expect(lines.log.join('\n')).not.toContain('analysing');
    expect(lines.error).toEqual([]);
  });

  it('prints no progress when the caller passes none (a --json or quiet path)', async () => {
    const error: string[] = [];
    const code = await runCodegen(
      {
        cwd: join(FIXTURES, 'valid'),
        out: join(dir, 'outbox.generated.ts'),
        catalogueDir: dir,
        importFrom: SOURCE_IMPORT,
      },
      { log: () => {}, error: (t) => void error.push(t), progress: () => {} },
    );
    expect(code).toBe(0);
    expect(error).toEqual([]);
  });

  it('npx outbox codegen prints them on a terminal stderr, and nothing of them into a pipe', async () => {
    const run = async (isTTY: boolean) => {
      let stderr = '';
      let stdout = '';
      const sink = {
        write: (t: string) => {
          stdout += t;
        },
        isTTY: false,
      };
      const code = await main(
        [
          'node',
          'outbox',
          'codegen',
          '--out',
          join(dir, 'cli.generated.ts'),
          '--catalogue-dir',
          dir,
          '--import-from',
          SOURCE_IMPORT,
        ],
        {
          stdout: sink,
          stderr: {
            write: (t: string) => {
              stderr += t;
            },
            isTTY,
          },
          cwd: join(FIXTURES, 'valid'),
          env: {},
        },
      );
      return { code, stderr, stdout };
    };
    const terminal = await run(true);
    expect(terminal.code).toBe(0);
    expect(terminal.stderr).toMatch(/^outbox codegen: loading the config… \(\d+\.\d s\)$/m);
    expect(terminal.stderr).toMatch(/^outbox codegen: done \(\d+\.\d s\)$/m);
    const piped = await run(false);
    expect(piped.code).toBe(0);
    expect(piped.stderr).not.toContain('loading the config');
  });
});
