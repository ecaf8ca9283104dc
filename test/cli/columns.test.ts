/** Issue 31 item 2: the operator's commands narrowed by `--column`, and `migrate --check` of event columns. */
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createOutbox, defineOutbox, type Outbox, silentLogger } from '../../src/index.js';
import { drainOutbox } from '../../testing/drain.js';
import { describeEachDialect } from '../support/dialects.js';
import config, { Ping } from './fixtures/columns.config.js';
import { type CliDatabase, openCliDatabase, REPO } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

const COLUMNS_CONFIG = join(REPO, 'test/cli/fixtures/columns.config.ts');

describeEachDialect(
  'outbox dead, requeue-dead --column; migrate --check of event columns',
  (dialect) => {
    let db: CliDatabase;
    let outbox: Outbox<typeof config> | undefined;
    beforeEach(async () => {
      db = await openCliDatabase(dialect.name);
    });
    afterEach(async () => {
      await outbox?.close();
      outbox = undefined;
      await db.cleanup();
    });

    const cli = (...args: string[]) => runCliInProcess([...args, '-c', COLUMNS_CONFIG, ...db.args]);

    it('--column name=value narrows dead, health and requeue-dead to the events holding it', async () => {
      outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
      await outbox.migrate();
      await outbox.fire('test.Ping', { n: 0 }, { columns: { order_id: 42, paid: true } });
      await outbox.fire('test.Ping', { n: 1 }, { columns: { order_id: 7, paid: true } });
      await outbox.fire('test.Ping', { n: 2 }, { columns: { order_id: 42, paid: false } });
      await drainOutbox(outbox);
      const dead = await cli('dead', '--column', 'order_id=42', '--json');
      expect(dead.code).toBe(0);
      expect(JSON.parse(dead.stdout)).toHaveLength(2);
      const both = await cli('dead', '--column', 'order_id=42', '--column', 'paid=false', '--json');
      expect(JSON.parse(both.stdout)).toHaveLength(1);
      const health = await cli('health', '--column', 'order_id=42', '--json');
      expect(JSON.parse(health.stdout)).toMatchObject({ dead: 2 });
      const requeued = await cli('requeue-dead', '--column', 'order_id=7', '--json');
      expect([requeued.code, JSON.parse(requeued.stdout)]).toEqual([0, { requeued: 1 }]);
      const wrong = await cli('dead', '--column', 'paid=maybe');
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toContain('paid is a boolean column; give true or false');
    });

    it('migrate --check fails (exit 2) while a declared column is missing; migrate adds it', async () => {
      const before = defineOutbox({ events: { 'test.Ping': Ping } });
      const old = createOutbox(before, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
      await old.migrate();
      await old.close();
      const check = await cli('migrate', '--check');
      expect(check.code).toBe(2);
      expect(check.stderr).toMatch(
        /event columns pending \(add column order_id \(bigint\), add column paid \(boolean\), index column order_id\)/,
      );
      expect((await cli('migrate')).code).toBe(0);
      const again = await cli('migrate', '--check');
      expect([again.code, again.stderr]).toEqual([0, '']);
    });
  },
);
