/** Issue 12 items 7 and 8: --version, help, options refused at parse time, .js configs. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueryTypes, Sequelize } from 'sequelize';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PING_CONFIG, REPO } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

describe('outbox basics', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outbox-cli-basics-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('--version prints the package version', async () => {
    const { version } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));
    const result = await runCliInProcess(['--version']);
    expect([result.code, result.stdout]).toEqual([0, `${version}\n`]);
  });

  it('relay --help documents the database order, its variables and the exit codes', async () => {
    const { stdout, code } = await runCliInProcess(['relay', '--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('OUTBOX_DATABASE_URL');
    expect(stdout).toContain('DATABASE_URL');
    expect(stdout).toMatch(/Exit codes:\n {2}0 .*\n {2}1 [\s\S]*\n {2}2 [\s\S]*\n {2}3 /);
  });

  it.each(['migrate', 'relay'])('%s takes every connection option', async (command) => {
    const { stdout } = await runCliInProcess([command, '--help']);
    for (const option of [
      '--url',
      '--schema',
      '--table-prefix',
      '--poll-interval',
      '--no-prepared-statements',
      '--connect-timeout',
      '--log-format',
    ])
      expect(stdout).toContain(option);
  });

  it('--batch-size abc is refused at parse time, in CLI words, before any config loads', async () => {
    const result = await runCliInProcess([
      'relay',
      '--once',
      '--batch-size',
      'abc',
      '-c',
      'missing.config.ts',
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      "error: option '--batch-size <n>' argument 'abc' is invalid. expected an integer from 1 to 10000.",
    );
    expect(result.stderr).not.toContain('missing.config.ts');
  });

  it('--table-prefix names the tables migrate creates', async () => {
    const file = join(dir, 'prefix.sqlite');
    const result = await runCliInProcess([
      'migrate',
      '-c',
      PING_CONFIG,
      '--url',
      `sqlite:${file}`,
      '--table-prefix',
      'app_outbox_',
    ]);
    expect(result.stdout).toContain(', tables app_outbox_*: applied migration 1, 2, 3, 4, 5, 6');
    const sequelize = new Sequelize({ dialect: 'sqlite', storage: file, logging: false });
    const rows = await sequelize.query<{ name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'app_outbox%' ORDER BY 1",
      { type: QueryTypes.SELECT },
    );
    await sequelize.close();
    expect(rows.map((r) => r.name)).toContain('app_outbox_deliveries');
  });

  it('codegen reads a .js config like a .ts one', async () => {
    const result = await runCliInProcess([
      'codegen',
      '-c',
      join(REPO, 'test/cli/fixtures/plain-js.config.js'),
      '--out',
      join(dir, 'outbox.generated.ts'),
      '--catalogue-dir',
      join(dir, 'catalogue'),
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const catalogue = JSON.parse(readFileSync(join(dir, 'catalogue/catalogue.json'), 'utf8'));
    expect(JSON.stringify(catalogue)).toContain('test.Ping');
  });

  it('a config that is not a module is refused by name', async () => {
    const result = await runCliInProcess(['codegen', '-c', join(REPO, 'package.json')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('a config is a TypeScript or JavaScript module');
  });
});
