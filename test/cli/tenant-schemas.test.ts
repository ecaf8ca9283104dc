/**
 * Issue 31: `outbox migrate --schemas` and `outbox relay --schemas`, a schema per tenant as
 * the operator runs it (PostgreSQL), and their refusal on a database without schemas.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createOutbox, silentLogger } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import { postgresUrl } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import { type CliDatabase, openCliDatabase, PING_CONFIG, REPO } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

const CONFIG = join(REPO, 'test/cli/fixtures/tenant-schemas.config.ts');

describeEachDialect('outbox migrate / relay --schemas', (dialect) => {
  let db: CliDatabase;
  beforeEach(async () => {
    db = await openCliDatabase(dialect.name);
  });
  afterEach(async () => {
    if (dialect.name === 'postgres') {
      const base = db.outboxOptions.schema!;
      for (const t of ['acme', 'globex', 'initech'])
        await db.outboxOptions.sequelize.query(`DROP SCHEMA IF EXISTS "${base}_${t}" CASCADE`);
    }
    await db.cleanup();
  });

  if (dialect.name !== 'postgres') {
    it('--schemas is refused without schemas, naming the database and the tenant column (exit 1)', async () => {
      const refused = await runCliInProcess([
        'migrate',
        '--schemas',
        'acme',
        '-c',
        PING_CONFIG,
        ...db.args,
      ]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('--schemas serves a schema per tenant, which');
      expect(refused.stderr).toContain(
        "keep tenants apart by the tenant column instead (settings: { tenancy: 'column' }, --tenant)",
      );
    });
    return;
  }

  it('migrate --schemas migrates every schema (--check says which are behind); relay --schemas serves them all', async () => {
    const base = db.outboxOptions.schema!;
    const schemaOf = (tenant: string) => `${base}_${tenant}`;
    const list = `${schemaOf('acme')},${schemaOf('globex')}`;
    // --schemas names the tenants' schemas: without the file's --schema.
    const cli = (...args: string[]) =>
      runCliInProcess([...args, '-c', CONFIG, '--url', postgresUrl()]);

    const behind = await cli('migrate', '--schemas', list, '--check');
    expect(behind.code).toBe(2);
    expect(behind.stderr).toContain(
      `2 of 2 tenant schemas behind: ${schemaOf('acme')} (tables missing), ${schemaOf('globex')} (tables missing)`,
    );
    const migrated = await cli('migrate', '--schemas', list);
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toContain(`${schemaOf('acme')}: applied migration 1,`);
    expect((await cli('migrate', '--schemas', list, '--check')).code).toBe(0);

    const outbox = createOutbox((await import(CONFIG)).default, {
      sequelize: db.outboxOptions.sequelize,
      tenantSchema: schemaOf,
      logger: silentLogger,
      wakeup: null,
    });
    await outbox.fire('test.Ping', { n: 1 }, { tenant: 'acme' });
    await outbox.fire('test.Ping', { n: 2 }, { tenant: 'globex' });
    await outbox.fire('test.Ping', { n: 3 }, { tenant: 'globex' });
    const relay = await cli('relay', '--once', '--schemas', list);
    // Every event of both schemas was attempted once (the handler refuses: exit 2).
    expect(relay.code).toBe(2);
    expect(relay.stderr).toContain('relay stopped — succeeded 0, failed 3');
    const attempts = async (tenant: string) => {
      const rt = runtimeOf(outbox).tenantSchemas!.runtimeOf(schemaOf(tenant));
      return (await rt.store.readDeliveries({})).map((d) => [d.status, d.attempts]);
    };
    expect(await attempts('acme')).toEqual([['failed', 1]]);
    expect(await attempts('globex')).toEqual([
      ['failed', 1],
      ['failed', 1],
    ]);

    // A schema not migrated is named, with the command that fixes it.
    const unmigrated = await cli('relay', '--once', '--schemas', `${list},${schemaOf('initech')}`);
    expect(unmigrated.code).toBe(1);
    expect(unmigrated.stderr).toContain(
      `tenant schema ${schemaOf('initech')}: the outbox tables are missing`,
    );
    await outbox.close();
  });
});
