import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sequelize } from 'sequelize';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import { captureLogger, refused } from './support.js';

let dir: string;
let sequelize: Sequelize;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'outboxkit-observe-'));
  sequelize = new Sequelize({ dialect: 'sqlite', storage: join(dir, 'db.sqlite'), logging: false });
});
afterEach(async () => {
  await sequelize.close();
  rmSync(dir, { recursive: true, force: true });
});

it('a relay whose claims fail for a while logs the outage once, and once more when the database is back, while relay:error fires for every failure', async () => {
  const Placed = event({ schema: z.object({ n: z.number() }) });
  const config = defineOutbox({
    events: { 'shop.Placed': Placed },
    receivers: { 'shop.ship': receiver(Placed, { handle: () => {} }) },
  });
  const logger = captureLogger();
  const outbox = createOutbox(config, { sequelize, wakeup: null, logger });
  await outbox.migrate();
  // The database "goes away" for twelve claims: the store's claim refuses, as pg does.
  const store = runtimeOf(outbox).store;
  const claim = store.claim.bind(store);
  let calls = 0;
  (store as { claim: typeof store.claim }).claim = async (options) => {
    calls += 1;
    if (calls <= 12) throw refused();
    return claim(options);
  };
  let errors = 0;
  outbox.on('relay:error', () => {
    errors += 1;
  });

  const report = await outbox.runRelay({ passes: 15, pollIntervalMs: 20, sleep: async () => {} });

  expect(report.passes).toBe(15);
  expect(errors).toBe(12);
  const lines = logger.entries.map((e) => [e.level, e.message]);
  expect(lines.slice(0, 5)).toEqual([
    ['warn', 'claim failed; retrying in 20 ms'],
    ['warn', 'claim failed; retrying in 40 ms'],
    ['warn', 'claim failed; retrying in 80 ms'],
    ['warn', 'claim failed; retrying in 160 ms'],
    [
      'warn',
      'claim failed; retrying in 320 ms — database unreachable: 5 failed claims in a row; retrying with backoff, logged once a minute until a claim succeeds',
    ],
  ]);
  expect(lines.slice(5)).toEqual([
    [
      'info',
      expect.stringMatching(
        /^database reachable again after \d+\.\d s \(12 failed claims\); claiming again$/,
      ),
    ],
  ]);
});
