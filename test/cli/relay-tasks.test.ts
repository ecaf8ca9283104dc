import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createOutbox, type Outbox, silentLogger } from '../../src/index.js';
import { describeEachDialect } from '../support/dialects.js';
import config from './fixtures/tasks.config.js';
import { type CliDatabase, openCliDatabase } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

const TASKS_CONFIG = join(import.meta.dirname, 'fixtures/tasks.config.ts');

describeEachDialect("the CLI and a config with a site: 'task' receiver", (dialect) => {
  let db: CliDatabase;
  let outbox: Outbox<typeof config>;
  beforeEach(async () => {
    db = await openCliDatabase(dialect.name);
    outbox = createOutbox(config, {
      ...db.outboxOptions,
      logger: silentLogger,
      wakeup: null,
      taskBackend: { name: 'held', enqueue: async () => {}, close: async () => {} },
    });
    await outbox.migrate();
    await outbox.fire('test.Ping', { n: 1 });
  });
  afterEach(async () => {
    await outbox.close();
    await db.cleanup();
  });

  const cli = (...args: string[]) =>
    runCliInProcess([...args, '-c', TASKS_CONFIG, ...db.args], { env: {} });

  it('a relay serving the task receiver lane is refused at start, naming it and the ways out', async () => {
    const result = await cli('relay', '--once', '--lane', 'tasks');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `receivers["test.task"] declares site: 'task', and npx outbox relay has no task backend to hand its rows to`,
    );
    expect(result.stderr).toContain('--exclude-lane tasks');
    expect((await cli('relay', '--once', '--all-lanes')).code).toBe(1);
  });

  it('a relay of the other lanes, and the operator commands, run as ever', async () => {
    expect((await cli('relay', '--once')).code).toBe(0);
    expect((await cli('relay', '--once', '--all-lanes', '--exclude-lane', 'tasks')).code).toBe(0);
    const health = await cli('health', '--json');
    expect(health.code).toBe(0);
    expect(JSON.parse(health.stdout)).toMatchObject({ owed: 1 }); // the task row, not handed off
  });
});
