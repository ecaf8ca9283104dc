/**
 * Issue 12 items 1, 2 and 7 (output names the database): which database a command works
 * on, and what it says about it.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { postgresUrl } from '../../testing/databases.js';
import { APP_CONFIG, PING_CONFIG } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

describe('outbox and its database', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outbox-cli-db-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string) => join(dir, name);

  it('with no database given, refuses and says where one comes from, creating no file', async () => {
    const cwd = mkdtempSync(join(dir, 'empty-'));
    const result = await runCliInProcess(['migrate', '-c', PING_CONFIG], { cwd });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('outbox: no database given');
    for (const source of ['--url', 'OUTBOX_DATABASE_URL', 'DATABASE_URL', 'export const sequelize'])
      expect(result.stderr).toContain(source);
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('takes --url, then OUTBOX_DATABASE_URL, then DATABASE_URL, and names the one it used', async () => {
    const [a, b, c] = ['a.sqlite', 'b.sqlite', 'c.sqlite'].map(file);
    const env = { OUTBOX_DATABASE_URL: `sqlite:${b}`, DATABASE_URL: `sqlite:${c}` };
    const byFlag = await runCliInProcess(['migrate', '-c', PING_CONFIG, '--url', `sqlite:${a}`], {
      env,
    });
    expect(byFlag.stdout).toBe(
      `outbox: migrated sqlite:${a} (from --url): applied migration 1, 2, 3, 4, 5, 6\n`,
    );
    const byOutboxVar = await runCliInProcess(['migrate', '-c', PING_CONFIG], { env });
    expect(byOutboxVar.stdout).toContain(`sqlite:${b} (from OUTBOX_DATABASE_URL)`);
    const byAppVar = await runCliInProcess(['migrate', '-c', PING_CONFIG], {
      env: { DATABASE_URL: env.DATABASE_URL },
    });
    expect(byAppVar.stdout).toContain(`sqlite:${c} (from DATABASE_URL)`);
    expect([a, b, c].map(existsSync)).toEqual([true, true, true]);
  });

  it('uses the sequelize the config exports, and names it', async () => {
    const app = file('app.sqlite');
    const result = await runCliInProcess(['migrate', '-c', APP_CONFIG], {
      env: { OUTBOX_TEST_APP_DB: app },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(
        `^outbox: migrated sqlite:${app} \\(the sequelize \\S*app\\.config\\.ts exports\\)`,
      ),
    );
  });

  it("refuses a URL naming another database than the config's sequelize, unless --use-url-over-config", async () => {
    const app = file('app2.sqlite');
    const other = file('other.sqlite');
    const env = { OUTBOX_TEST_APP_DB: app };
    const refused = await runCliInProcess(
      ['relay', '--once', '-c', APP_CONFIG, '--url', `sqlite:${other}`],
      {
        env,
      },
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`--url names sqlite:${other}, but`);
    expect(refused.stderr).toContain('models are bound to its Sequelize');
    expect(refused.stderr).toContain('--use-url-over-config');
    expect(existsSync(other)).toBe(false);

    const forced = await runCliInProcess(
      ['migrate', '-c', APP_CONFIG, '--url', `sqlite:${other}`, '--use-url-over-config'],
      { env },
    );
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain(`migrated sqlite:${other} (from --url, over the config`);
    expect(existsSync(other)).toBe(true);
  });

  it("a URL naming the config's own database goes through the config's sequelize", async () => {
    const app = file('app3.sqlite');
    const result = await runCliInProcess(['migrate', '-c', APP_CONFIG], {
      env: { OUTBOX_TEST_APP_DB: app, DATABASE_URL: `sqlite:${app}` },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`sqlite:${app} (from DATABASE_URL, through the sequelize`);
  });

  it.skipIf(!inject('pgAvailable'))(
    'masks the password and names the PostgreSQL schema it works in',
    async () => {
      const url = postgresUrl().replace('postgres://postgres@', 'postgres://postgres:s3cret@');
      const result = await runCliInProcess(['migrate', '--check', '-c', PING_CONFIG], {
        env: { DATABASE_URL: url },
      });
      expect(result.stdout + result.stderr).not.toContain('s3cret');
      expect(result.stdout + result.stderr).toContain('postgres://postgres:***@');
      expect(result.stdout + result.stderr).toMatch(/\(from DATABASE_URL\), schema \w+/);
    },
  );
});
