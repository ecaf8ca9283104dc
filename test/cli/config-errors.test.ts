import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from './support/cli.js';
import { type InProcessResult, runCliInProcess } from './support/in-process.js';

/** A config error is printed for a person: where, what, and no stack trace. */
function expectReadableFailure(result: InProcessResult): void {
  expect(result.code).toBe(1);
  expect(result.stdout).toBe('');
  expect(result.stderr).toMatch(/^outbox: /);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  expect(result.stderr.split('\n').length).toBeLessThan(8);
}

describe('outbox with a config it cannot use', () => {
  let cwd: string;
  const write = (name: string, text: string) => {
    writeFileSync(join(cwd, name), text);
    return join(cwd, name);
  };

  beforeAll(() => {
    cwd = mkdtempSync(join(tmpdir(), 'outbox-cli-'));
  });
  afterAll(() => rmSync(cwd, { recursive: true, force: true }));

  it('a syntax error names the file, line and column, without a stack trace', async () => {
    const file = write(
      'broken.config.ts',
      [
        "import { defineOutbox } from 'outboxkit';",
        '',
        'export default defineOutbox({',
        '  events: {',
        "    'shop.OrderPlaced': ,",
        '  },',
        '});',
        '',
      ].join('\n'),
    );
    const result = await runCliInProcess(['migrate', '-c', 'broken.config.ts'], { cwd });
    expectReadableFailure(result);
    expect(result.stderr).toContain('syntax error');
    expect(result.stderr).toContain(`${file}:5:25`);
    expect(result.stderr).toContain('Unexpected ","');
  });

  it('a missing config names the path it looked at and how to fix it', async () => {
    const result = await runCliInProcess(['relay', '--once'], { cwd });
    expectReadableFailure(result);
    expect(result.stderr).toContain(`no config at ${join(cwd, 'outbox.config.ts')}`);
    expect(result.stderr).toContain('--config');

    const named = await runCliInProcess(['migrate', '-c', 'nope.config.ts'], { cwd });
    expectReadableFailure(named);
    expect(named.stderr).toContain(join(cwd, 'nope.config.ts'));
  });

  it('a config with a typo names the config path and the likely fix', async () => {
    const result = await runCliInProcess(
      ['migrate', '-c', join(REPO, 'test/cli/fixtures/typo.config.ts')],
      {
        cwd,
      },
    );
    expectReadableFailure(result);
    expect(result.stderr).toContain('invalid config');
    expect(result.stderr).toContain(
      'receivers["test.record"] has an unknown option "maxAtempts" — did you mean "maxAttempts"?',
    );
  });
});
