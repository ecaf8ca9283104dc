/** Issue 31: the operator's commands narrowed by `--tenant`, as the operator runs them. */
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createOutbox, type Outbox, silentLogger } from '../../src/index.js';
import { drainOutbox } from '../../testing/drain.js';
import { describeEachDialect } from '../support/dialects.js';
import config from './fixtures/tenants.config.js';
import { type CliDatabase, openCliDatabase, PING_CONFIG, REPO } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

const TENANTS_CONFIG = join(REPO, 'test/cli/fixtures/tenants.config.ts');

describeEachDialect('outbox dead, requeue-dead, health --tenant', (dialect) => {
  let db: CliDatabase;
  let outbox: Outbox<typeof config>;
  beforeEach(async () => {
    db = await openCliDatabase(dialect.name);
    outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
    await outbox.migrate();
  });
  afterEach(async () => {
    await outbox.close();
    await db.cleanup();
  });

  const cli = (...args: string[]) => runCliInProcess([...args, '-c', TENANTS_CONFIG, ...db.args]);

  it('each reads or writes only the tenant named', async () => {
    for (const [n, tenant] of [
      [0, 'acme'],
      [1, 'globex'],
      [2, 'acme'],
    ] as const)
      await outbox.fire('test.Ping', { n }, { tenant });
    await drainOutbox(outbox);
    const dead = await cli('dead', '--tenant', 'acme', '--json');
    expect(dead.code).toBe(0);
    expect(JSON.parse(dead.stdout).map((d: { tenant: string }) => d.tenant)).toEqual([
      'acme',
      'acme',
    ]);
    const health = await cli('health', '--tenant', 'globex', '--json');
    expect(JSON.parse(health.stdout)).toMatchObject({ dead: 1 });
    const requeued = await cli('requeue-dead', '--tenant', 'globex', '--json');
    expect([requeued.code, JSON.parse(requeued.stdout)]).toEqual([0, { requeued: 1 }]);
    expect((await outbox.deadLetters()).map((d) => d.tenant)).toEqual(['acme', 'acme']);
  });

  it('--tenant on an outbox without tenancy is refused, naming it (exit 1)', async () => {
    const refused = await runCliInProcess([
      'dead',
      '--tenant',
      'acme',
      '-c',
      PING_CONFIG,
      ...db.args,
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('but this outbox keeps no tenants');
  });
});
