/**
 * The CLI asks the dialect registry (src/storage/dialects.ts), never a name of its own: the
 * URL starts it accepts and the dialects `migrate --print-sql --dialect` takes are the
 * registry's, so a dialect added there reaches the CLI with no change to cli/. The
 * messages are also pinned as written today: the registry's words are the same ones.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dialectEntries,
  dialectsWith,
  listDialects,
  listUrlPrefixes,
  supportedDialects,
} from '../../src/storage/dialects.js';
import { PING_CONFIG } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

describe('a database URL the registry has no entry for', () => {
  it('is refused, naming every URL start of the registry (and the URL masked)', async () => {
    const url = 'oracle://app:secret@db:1521/shop';
    for (const [args, env] of [
      [['migrate', '--check', '-c', PING_CONFIG, '--url', url], {}],
      [['dead', '-c', PING_CONFIG], { DATABASE_URL: url }],
    ] as const) {
      const refused = await runCliInProcess(args, { env });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(
        `outbox: the database URL must start with ${listUrlPrefixes()} (got oracle://app:***@db:1521/shop)\n`,
      );
      for (const prefix of dialectEntries().flatMap((d) => d.connection.urlPrefixes)) {
        expect(refused.stderr).toContain(prefix);
      }
      expect(refused.stderr).toContain(
        'postgres://, postgresql://, sqlite:, mariadb:// or mysql:// (got',
      );
      expect(refused.stderr).not.toContain('secret');
    }
  });

  it('refuses a mistyped scheme (postgress://) before connecting, with every command (issue 33)', async () => {
    const url = 'postgress://app:secret@127.0.0.1:5432/test';
    for (const command of [['relay', '--once'], ['health'], ['migrate']]) {
      const refused = await runCliInProcess([...command, '-c', PING_CONFIG, '--url', url]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(
        `outbox: the database URL must start with ${listUrlPrefixes()} (got postgress://app:***@127.0.0.1:5432/test)\n`,
      );
    }
  });
});

describe('migrate --print-sql --dialect', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outbox-cli-dialects-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("takes every dialect of the registry, and prints each one's migrations", async () => {
    expect(supportedDialects().length).toBeGreaterThan(0);
    for (const entry of dialectEntries()) {
      const printed = await runCliInProcess(['migrate', '--print-sql', '--dialect', entry.name]);
      expect([printed.code, printed.stderr]).toEqual([0, '']);
      expect(printed.stdout).toContain(`-- outboxkit migrations for ${entry.name}, tables`);
      expect(printed.stdout).toContain('CREATE TABLE IF NOT EXISTS');
      // What the dialect runs outside the transaction, from its entry (SQLite: WAL).
      for (const statement of entry.migration.beforeMigrate) {
        expect(printed.stdout).toContain(
          `-- ${entry.title}: outboxkit also sets ${statement}, outside any transaction.`,
        );
      }
    }
    const sqlite = await runCliInProcess(['migrate', '--print-sql', '--dialect', 'sqlite']);
    expect(sqlite.stdout).toContain(
      '-- SQLite: outboxkit also sets PRAGMA journal_mode=WAL, outside any transaction.',
    );
  });

  it('refuses any other, listing exactly the registry’s dialects as the choices', async () => {
    const refused = await runCliInProcess(['migrate', '--print-sql', '--dialect', 'oracle']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `error: option '--dialect <dialect>' argument 'oracle' is invalid. Allowed choices are ${supportedDialects().join(', ')}.`,
    );
    expect(refused.stderr).toContain('Allowed choices are postgres, sqlite, mariadb, mysql.');
    const help = await runCliInProcess(['migrate', '--help']);
    expect(help.stdout.replace(/\s+/g, ' ')).toContain(
      `(choices: ${supportedDialects()
        .map((name) => `"${name}"`)
        .join(', ')})`,
    );
  });

  it('without a dialect or a database, names the registry’s dialects to pass', async () => {
    const refused = await runCliInProcess(['migrate', '--print-sql'], { cwd: dir });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `outbox: pass --dialect ${supportedDialects().join('|')} (or a database, --url or the config’s sequelize, to take it from)\n`,
    );
    expect(refused.stderr).toContain('pass --dialect postgres|sqlite|mariadb|mysql (');
  });

  it('--schema is refused for a dialect without schemas, naming those that have them', async () => {
    const without = dialectEntries().filter((d) => !d.capabilities.schemas);
    const withSchemas = listDialects(
      dialectsWith((c) => c.schemas),
      { join: 'or', titles: true },
    );
    expect(without.length).toBeGreaterThan(0);
    for (const entry of without) {
      const refused = await runCliInProcess([
        'migrate',
        '--print-sql',
        '--dialect',
        entry.name,
        '--schema',
        'app',
      ]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(
        `outbox: --schema is for ${withSchemas}; ${entry.name} has no schemas\n`,
      );
    }
    const args = (dialect: string) => ['migrate', '--print-sql', '--dialect', dialect];
    const sqlite = await runCliInProcess([...args('sqlite'), '--schema', 'app']);
    expect(sqlite.stderr).toBe('outbox: --schema is for PostgreSQL; sqlite has no schemas\n');
    for (const entry of dialectsWith((c) => c.schemas)) {
      const printed = await runCliInProcess([...args(entry.name), '--schema', 'app']);
      expect([printed.code, printed.stderr]).toEqual([0, '']);
      expect(printed.stdout).toContain('"app"."outbox_*"');
    }
  });
});
