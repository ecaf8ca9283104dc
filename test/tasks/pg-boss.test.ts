import PgBoss from 'pg-boss';
import { describe, expect, it } from 'vitest';
import { pgBossTaskBackend, pgBossTaskWorker } from '../../src/index.js';
import { postgresUrl } from '../../testing/databases.js';
import { taskBackendSuite } from './suite.js';

/** A pg-boss of the test's own, in the test's own schema (pg-boss's `schema` option). */
async function startBoss(schema: string): Promise<PgBoss> {
  const boss = new PgBoss({
    connectionString: postgresUrl(),
    schema,
    max: 4,
    supervise: false,
    schedule: false,
  });
  boss.on('error', () => {});
  await boss.start();
  return boss;
}

taskBackendSuite('pg-boss', async (db, queue) => {
  const schema = db.outboxOptions.schema!;
  const boss = await startBoss(schema);
  return {
    backend: pgBossTaskBackend(boss, { queue }),
    startWorker: (outbox, onDelivered) =>
      pgBossTaskWorker(outbox, boss, { queue, onDelivered, pollingIntervalSeconds: 0.5 }),
    async enqueueAgain(handOff) {
      await boss.send(queue, { ...handOff }, { retryLimit: 0 });
    },
    async queueRetries() {
      const [rows] = (await db.sequelize.query(
        `SELECT count(*)::int AS n FROM "${schema}".job WHERE name = $1 AND (retry_count > 0 OR state IN ('retry', 'failed'))`,
        { bind: [queue] },
      )) as [{ n: number }[], unknown];
      return rows[0].n;
    },
    childArgs: { backend: 'pg-boss' },
    close: () => boss.stop({ graceful: false, close: true, wait: true }),
  };
});

describe('pgBossTaskBackend / pgBossTaskWorker: options', () => {
  it('refuses what is not a started PgBoss, a bad queue name and an unknown option, naming them', () => {
    expect(() => pgBossTaskBackend({}, { queue: 'q' })).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: pgBossTaskBackend(boss) needs a started PgBoss instance (pg-boss 10: \`const boss = new PgBoss(url); await boss.start()\`)]`,
    );
    const boss = { insert() {}, createQueue() {}, work() {} };
    expect(() => pgBossTaskBackend(boss, { queue: 'a b' })).toThrow(
      /pgBossTaskBackend\(\{ queue \}\) must be a queue name of letters, digits, _ \. and - \(got "a b"\)/,
    );
    expect(() => pgBossTaskBackend(boss, { queue: 'q', retryLimit: 3 } as never)).toThrow(
      /pgBossTaskBackend\(\) has no option "retryLimit"/,
    );
  });
});
