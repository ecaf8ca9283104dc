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
import { type CliDatabase, openCliDatabase, PING_CONFIG, REPO, waitFor } from './support/cli.js';
import { runCliInProcess, startCliInProcess } from './support/in-process.js';

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
    // Every event of both schemas was attempted (the handler refuses: exit 2; a retry whose
    // jittered backoff is already due may be attempted twice).
    expect(relay.code).toBe(2);
    expect(relay.stderr).toMatch(/relay stopped — succeeded 0, failed \d+/);
    const attempted = async (tenant: string) => {
      const rt = runtimeOf(outbox).tenantSchemas!.runtimeOf(schemaOf(tenant));
      return (await rt.store.readDeliveries({})).map(
        (d) => d.status === 'failed' && d.attempts >= 1,
      );
    };
    expect(await attempted('acme')).toEqual([true]);
    expect(await attempted('globex')).toEqual([true, true]);

    // An operation's --tenant picks the schema of the tenant's name (the CLI has no tenantSchema).
    const health = await cli('health', '--tenant', schemaOf('globex'), '--json');
    expect([health.code, health.stderr]).toEqual([0, '']);
    expect(JSON.parse(health.stdout)).toMatchObject({ owed: 2 });
    const dead = await cli('dead', '--tenant', schemaOf('acme'), '--json');
    expect([dead.code, JSON.parse(dead.stdout)]).toEqual([0, []]);
    const missing = await cli('dead', '--tenant', schemaOf('initech'), '--json');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(
      `tenant schema ${schemaOf('initech')}: the outbox tables are missing. Run \`npx outbox migrate --schemas ${schemaOf('initech')}\``,
    );

    // A schema not migrated is named, with the command that fixes it.
    const unmigrated = await cli('relay', '--once', '--schemas', `${list},${schemaOf('initech')}`);
    expect(unmigrated.code).toBe(1);
    expect(unmigrated.stderr).toContain(
      `tenant schema ${schemaOf('initech')}: the outbox tables are missing`,
    );
    await outbox.close();
  });

  it('relay --schemas --metrics-port gauges each schema it serves, labelled schema', async () => {
    const base = db.outboxOptions.schema!;
    const schemaOf = (tenant: string) => `${base}_${tenant}`;
    const list = `${schemaOf('acme')},${schemaOf('globex')}`;
    const cliArgs = ['-c', CONFIG, '--url', postgresUrl()];
    expect((await runCliInProcess(['migrate', '--schemas', list, ...cliArgs])).code).toBe(0);
    const outbox = createOutbox((await import(CONFIG)).default, {
      sequelize: db.outboxOptions.sequelize,
      tenantSchema: schemaOf,
      logger: silentLogger,
      wakeup: null,
    });
    await outbox.fire('test.Ping', { n: 1 }, { tenant: 'acme' });
    await outbox.fire('test.Ping', { n: 2 }, { tenant: 'globex' });
    await outbox.fire('test.Ping', { n: 3 }, { tenant: 'globex' });
    const relay = startCliInProcess([
      'relay',
      '--schemas',
      list,
      '--metrics-port',
      '0',
      ...cliArgs,
    ]);
    try {
      let url = '';
      await waitFor(() => {
        url =
          /metrics at (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(relay.output().stderr)?.[1] ?? '';
        return url !== '';
      }, 'the relay to log its metrics endpoint');
      // Each schema's gauges count its own rows: owed (a retry in its backoff included) plus
      // dead is its events, whatever the relay has got to by the scrape.
      const value = (text: string, name: string, tenant: string) =>
        Number(
          new RegExp(`^${name}\\{schema="${schemaOf(tenant)}"\\} (\\S+)$`, 'm').exec(text)?.[1],
        );
      const text = await (await fetch(url)).text();
      expect(value(text, 'outbox_owed', 'acme') + value(text, 'outbox_dead', 'acme')).toBe(1);
      expect(value(text, 'outbox_owed', 'globex') + value(text, 'outbox_dead', 'globex')).toBe(2);
      expect(text).not.toMatch(/^outbox_dead /m);
    } finally {
      relay.stop('SIGTERM');
      await relay.done;
      await outbox.close();
    }
  });
});
