import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Test files run in parallel: each has a database of its own (a PostgreSQL schema, a
 * SQLite file), and its broker names (streams, queues, topics) carry a run id. Most of a
 * file's time is spent waiting on a server, so one worker per core, and never fewer than
 * two (vitest's default, one worker less than the cores, would run one file at a time on
 * this 2-core machine). `OUTBOX_TEST_WORKERS` overrides it.
 */
const workers = Number(process.env.OUTBOX_TEST_WORKERS) || Math.max(2, availableParallelism());

/**
 * `OUTBOX_TEST_SEQUELIZE=oldest` runs the suites against the oldest Sequelize of the declared
 * peer range (`sequelize-oldest`, an `npm:` alias of sequelize@6.21.x) instead of the latest
 * 6.x: src/sequelize/internals.ts lists the private internals a release could move, and
 * .ci/run runs the storage, fire and capture suites at both ends.
 */
const sequelizeAlias =
  process.env.OUTBOX_TEST_SEQUELIZE === 'oldest'
    ? [{ find: /^sequelize$/, replacement: 'sequelize-oldest' }]
    : [];

export default defineConfig({
  resolve: { alias: sequelizeAlias },
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    globalSetup: ['test/global-setup.ts'],
    maxWorkers: workers,
    // Tests a file marks `describe.concurrent` (the Kafka suites: each test waits seconds on
    // the mock cluster's group join, a timer, not work) all run at once; vitest's default of
    // 5 would run them in waves. Only files that opt in run anything concurrently.
    maxConcurrency: 20,
    projects: [
      {
        extends: true,
        test: {
          name: 'outboxkit',
          include: ['test/**/*.test.ts'],
          // A file that leaves a connection, server, child or timer open fails.
          setupFiles: ['test/support/leak-check.ts'],
        },
      },
      // The shop's example test, run as the README shows it (its own setup file).
      'examples/shop/test/vitest.config.ts',
    ],
  },
});
