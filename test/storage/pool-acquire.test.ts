import { ConnectionAcquireTimeoutError, Sequelize } from 'sequelize';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../src/index.js';
import { runPooled } from '../../src/storage/postgres/pg-client.js';
import { postgresTestSchema, postgresUrl, type TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/drain.js';

/**
 * The relay takes its PostgreSQL connections from Sequelize's pool straight from the pool
 * when nothing would tell the difference (`acquireConnection`, pg-client.ts), and through
 * Sequelize's `getConnection` otherwise. Either way: a user's pool hooks run, the pool's
 * size and timeout hold, and the acquire timeout is Sequelize's own error.
 */
describe.skipIf(!inject('pgAvailable'))('the relay’s pool connections [postgres]', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await postgresTestSchema();
  });
  afterAll(() => db.cleanup());

  /** A handler that does database work in its transaction: it takes a connection. */
  const configFor = (sequelize: Sequelize) =>
    defineOutbox({
      events: { 'a.Happened': event({ schema: z.object({ n: z.number() }) }) },
      receivers: {
        'r.handler': receiver('a.Happened', {
          handle: async (_e, ctx) => {
            await sequelize.query('SELECT 1', { transaction: ctx.transaction });
          },
        }),
      },
    });

  /** A Sequelize of its own whose connections search the test schema. */
  const open = (options: ConstructorParameters<typeof Sequelize>[1] = {}) =>
    new Sequelize(postgresUrl(), {
      logging: false,
      ...options,
      hooks: {
        ...options.hooks,
        afterConnect: async (connection) => {
          await (connection as { query(sql: string): Promise<unknown> }).query(
            `SET search_path TO "${db.outboxOptions.schema}"`,
          );
        },
      },
    });

  /** An outbox of {@link configFor} on `sequelize`, its tables under `prefix`, migrated. */
  const migratedOutbox = async (sequelize: Sequelize, prefix: string) => {
    const outbox = createOutbox(configFor(sequelize), {
      sequelize,
      schema: db.outboxOptions.schema,
      tablePrefix: prefix,
      wakeup: null,
      logger: silentLogger,
    });
    await outbox.migrate();
    return outbox;
  };

  /**
   * Whether this Sequelize has pool hooks (`beforePoolAcquire`/`afterPoolAcquire`): the
   * newer 6.x do; the peer range's low end (6.21) refuses to add one at all, so the hooks
   * a user could register do not exist there (the CI run at 6.21 skips this test).
   */
  const poolHooks = (() => {
    const probe = new Sequelize({ dialect: 'sqlite', storage: ':memory:', logging: false });
    try {
      (probe as unknown as { addHook(name: string, fn: () => void): void }).addHook(
        'beforePoolAcquire',
        () => {},
      );
      return true;
    } catch {
      return false;
    } finally {
      void probe.close();
    }
  })();

  it.skipIf(!poolHooks)(
    'runs the pool hooks a user registered, for the claim, the record and the handler’s transaction',
    async () => {
      const sequelize = open({ pool: { max: 3 } });
      const before: string[] = [];
      let after = 0;
      sequelize.addHook('beforePoolAcquire', () => {
        before.push('before');
      });
      sequelize.addHook('afterPoolAcquire', () => {
        after += 1;
      });
      const outbox = await migratedOutbox(sequelize, 'hooked_');
      try {
        for (let n = 0; n < 3; n++) await outbox.fire('a.Happened', { n });
        const acquiredBefore = after;
        const report = await drainOutbox(outbox);
        expect(report.succeeded).toBe(3);
        // At least a claim, and each handler's transaction: every one through the hooks.
        expect(after - acquiredBefore).toBeGreaterThanOrEqual(4);
        expect(before.length).toBe(after);
      } finally {
        await outbox.close();
        await sequelize.close();
      }
    },
  );

  it('delivers through the pool directly when no hook is registered, within the pool’s size', async () => {
    const sequelize = open({ pool: { max: 1 } });
    const outbox = await migratedOutbox(sequelize, 'direct_');
    try {
      for (let n = 0; n < 5; n++) await outbox.fire('a.Happened', { n });
      // One connection for the claim, the handlers' transactions and the record in turn.
      const report = await drainOutbox(outbox);
      expect(report.succeeded).toBe(5);
      const [rows] = (await sequelize.query(
        `SELECT status, count(*)::int AS n FROM "${db.outboxOptions.schema}".direct_deliveries GROUP BY status`,
      )) as [{ status: string; n: number }[], unknown];
      expect(rows).toEqual([{ status: 'succeeded', n: 5 }]);
    } finally {
      await outbox.close();
      await sequelize.close();
    }
  });

  it('after the Sequelize instance is closed, fails with Sequelize’s own error for a closed pool', async () => {
    const sequelize = open({ pool: { max: 1 } });
    await sequelize.authenticate();
    await sequelize.close();
    await expect(runPooled(sequelize, { text: 'SELECT 1', values: [] })).rejects.toThrow(
      'ConnectionManager.getConnection was called after the connection manager was closed!',
    );
  });

  it('gives Sequelize’s ConnectionAcquireTimeoutError when the pool stays empty past its acquire timeout', async () => {
    const sequelize = open({ pool: { max: 1, acquire: 150 } });
    try {
      await sequelize.authenticate(); // the server's version is known from here on
      const transaction = await sequelize.transaction(); // holds the only connection
      try {
        const started = Date.now();
        const error = await runPooled(sequelize, { text: 'SELECT 1', values: [] }).catch(
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(ConnectionAcquireTimeoutError);
        expect(Date.now() - started).toBeGreaterThanOrEqual(100);
      } finally {
        await transaction.rollback();
      }
      // The connection is back: the next statement runs.
      const result = await runPooled(sequelize, { text: 'SELECT 1 AS one', values: [] });
      expect(result.rows).toEqual([{ one: 1 }]);
    } finally {
      await sequelize.close();
    }
  });
});
