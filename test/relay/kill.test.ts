import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ConfigurationError } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { describeEachDialect, isMariadb } from '../support/dialects.js';
import { killConfig } from './fixtures/kill-config.js';
import {
  createReceivedTable,
  freshPrefix,
  openOutbox,
  receivedIds,
  rowsOf,
  shortSleep,
  waitFor,
} from './support.js';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..', '..');
const fixture = join(here, 'fixtures', 'relay-process.ts');
const EVENTS = 20;
const LEASE_SECONDS = 60;

/** Spawn the relay process and follow what it prints. */
function spawnRelay(args: object) {
  const child: ChildProcess = spawn('npx', ['tsx', fixture, JSON.stringify(args)], {
    cwd: repoRoot,
    env: process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { pid: 0, started: [] as number[], stderr: '' };
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const lines = buffer.split('\n');
    buffer = lines.pop()!;
    for (const line of lines) {
      const [word, value] = line.trim().split(' ');
      if (word === 'pid') out.pid = Number(value);
      if (word === 'delivering') out.started.push(Number(value));
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    out.stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    child.once('exit', () => resolve());
  });
  return { child, out, exited };
}

describeEachDialect('relay: kill -9', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('kill -9 of a relay mid-batch loses nothing: another relay delivers every event once the lease lapses', async () => {
    const table = await createReceivedTable(db, 'received_kill');
    const tablePrefix = freshPrefix();
    // The surviving side runs the same config, without the slowness.
    const outbox = await openOutbox(
      db,
      killConfig({ sequelize: db.sequelize, table, slowMs: 0, leaseSeconds: LEASE_SECONDS }),
      { tablePrefix, clock: () => new Date() },
    );
    const fired = await outbox.fireMany(
      Array.from({ length: EVENTS }, (_, n) => ({ name: 'post.Parcel' as const, payload: { n } })),
    );

    const storage = (db.sequelize as unknown as { options: { storage?: string } }).options.storage;
    const relay = spawnRelay({
      dialect: dialect.name,
      storage,
      url: isMariadb(dialect.name) ? db.url : undefined,
      schema: db.outboxOptions.schema,
      tablePrefix,
      table,
      slowMs: 150,
      leaseSeconds: LEASE_SECONDS,
    });
    try {
      // Mid-batch: the whole backlog is one claim, a few deliveries are committed, one is in hand.
      await waitFor(
        () => relay.out.started.length >= 4 && relay.out.pid > 0,
        `the relay process to start its fourth delivery (stderr: ${relay.out.stderr})`,
        25_000,
      );
      process.kill(relay.out.pid, 'SIGKILL');
    } finally {
      // If anything above failed, take the process (and its npx wrapper) down all the same.
      if (relay.out.pid > 0) {
        try {
          process.kill(relay.out.pid, 'SIGKILL');
        } catch {}
      }
      await Promise.race([relay.exited, new Promise((resolve) => setTimeout(resolve, 5_000))]);
      if (relay.child.exitCode === null && relay.child.signalCode === null)
        relay.child.kill('SIGKILL');
    }

    // The kill left work undone: rows still claimed under the dead relay's lease.
    const afterKill = await rowsOf(outbox, 'post.deliver');
    const claimed = afterKill.filter((r) => r.status === 'claimed');
    expect(claimed.length).toBeGreaterThan(0);
    expect(claimed.every((r) => r.claimedBy === 'doomed' && r.attempts === 0)).toBe(true);
    expect(afterKill.filter((r) => r.status === 'succeeded').length).toBeLessThan(EVENTS);
    // Not before the lease lapses: on the real clock the dead relay's rows stay put, and
    // on SQLite its single-relay lock still refuses a second relay.
    expect((await drainOutbox(outbox)).succeeded).toBe(0);
    if (dialect.name === 'sqlite') {
      await expect(outbox.runRelay({ passes: 1 })).rejects.toBeInstanceOf(ConfigurationError);
    }

    // Another relay, on a clock past the lease, takes over and delivers the rest.
    const lapsed = () => new Date(Date.now() + (LEASE_SECONDS * 1.1 + 1) * 1000);
    const survivor = await openOutbox(
      db,
      killConfig({ sequelize: db.sequelize, table, slowMs: 0, leaseSeconds: LEASE_SECONDS }),
      { tablePrefix, clock: lapsed },
    );
    const report = await survivor.runRelay({
      workerId: 'survivor',
      passes: 2,
      sleep: shortSleep(),
    });
    expect(report.succeeded).toBe(claimed.length);
    expect(await receivedIds(db, table)).toEqual(fired.map((e) => e.id).sort());
    // Every row settled exactly once: the killed delivery's transaction never committed.
    expect((await rowsOf(outbox, 'post.deliver')).map((r) => [r.status, r.attempts])).toEqual(
      Array.from({ length: EVENTS }, () => ['succeeded', 1]),
    );
  }, 60_000);
});
