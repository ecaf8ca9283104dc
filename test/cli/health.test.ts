import { afterEach, beforeEach, expect, it } from 'vitest';
import { createOutbox, type Outbox, silentLogger } from '../../src/index.js';
import { describeEachDialect } from '../support/dialects.js';
import config from './fixtures/ping.config.js';
import { type CliDatabase, openCliDatabase, PING_CONFIG } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

const MINUTE = 60_000;

describeEachDialect('outbox health', (dialect) => {
  let db: CliDatabase;
  let outbox: Outbox<typeof config>;
  /** Events are recorded this long before the real clock, so they are that old when read. */
  let recordedAgoMs = 0;

  beforeEach(async () => {
    db = await openCliDatabase(dialect.name);
    recordedAgoMs = 0;
    outbox = createOutbox(config, {
      ...db.outboxOptions,
      logger: silentLogger,
      wakeup: null,
      clock: () => new Date(Date.now() - recordedAgoMs),
    });
    await outbox.migrate();
  });
  afterEach(async () => {
    await outbox.close();
    await db.cleanup();
  });

  const firePings = (count: number) =>
    outbox.fireMany(
      Array.from({ length: count }, (_, n) => ({ name: 'test.Ping' as const, payload: { n } })),
    );
  const health = (...args: string[]) =>
    runCliInProcess(['health', '-c', PING_CONFIG, ...db.args, ...args]);

  /** Run SQL on the outbox's delivery rows. */
  async function onDeliveries(set: string): Promise<void> {
    const table = db.outboxOptions.schema
      ? `"${db.outboxOptions.schema}"."outbox_deliveries"`
      : '"outbox_deliveries"';
    await db.outboxOptions.sequelize.query(`UPDATE ${table} SET ${set}`);
  }

  it('prints the health for people and exits 0 with no threshold given', async () => {
    await firePings(3);
    const result = await health();
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^owed 3, oldest owed \d+s \(since .+\), claimed 0, lapsed leases 0, scheduled 0, dead 0\n/,
    );
    expect(result.stdout).toMatch(/receiver\s+owed\s+oldest owed\s+claimed\s+scheduled\s+dead/);
    expect(result.stdout).toMatch(/test\.record\s+3\s+\d+s\s+0\s+0\s+0/);
  });

  it('--json prints one JSON object for machines', async () => {
    await firePings(2);
    const result = await health('--json');
    expect(result.code).toBe(0);
    const body = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(body).toMatchObject({
      owed: 2,
      claimed: 0,
      lapsedLeases: 0,
      scheduled: 0,
      dead: 0,
      ok: true,
      breaches: [],
      receivers: [{ receiverKey: 'test.record', owed: 2, claimed: 0, scheduled: 0, dead: 0 }],
    });
    expect(typeof body.oldestOwedAt).toBe('string');
    expect(body.oldestOwedAgeSeconds).toBeGreaterThanOrEqual(0);
  });

  it('an empty outbox is within every threshold', async () => {
    const result = await health(
      '--max-owed',
      '0',
      '--max-oldest-age',
      '1s',
      '--max-dead',
      '0',
      '--max-lapsed',
      '0',
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('no receiver has anything owed, scheduled or dead');
  });

  it('exits 2 past --max-owed, and 0 at it', async () => {
    await firePings(3);
    expect((await health('--max-owed', '3')).code).toBe(0);
    const past = await health('--max-owed', '2');
    expect(past.code).toBe(2);
    expect(past.stderr).toContain('outbox: past --max-owed: 3 (max 2)');
  });

  it('exits 2 past --max-oldest-age, read from the event’s record time', async () => {
    recordedAgoMs = 10 * MINUTE;
    await firePings(1);
    expect((await health('--max-oldest-age', '1h')).code).toBe(0);
    const past = await health('--max-oldest-age', '5m', '--json');
    expect(past.code).toBe(2);
    const body = JSON.parse(past.stdout) as {
      ok: boolean;
      breaches: { threshold: string; max: number }[];
    };
    expect(body.ok).toBe(false);
    expect(body.breaches).toMatchObject([{ threshold: '--max-oldest-age', max: 300 }]);
    expect(past.stderr).toMatch(
      /past --max-oldest-age: the oldest owed delivery has been owed 10m \d+s \(max 5m 0s\)/,
    );
  });

  it('exits 2 past --max-dead', async () => {
    await firePings(2);
    await onDeliveries(`status = 'dead', attempts = 1, last_error = 'refused'`);
    expect((await health('--max-dead', '2')).code).toBe(0);
    const past = await health('--max-dead', '1');
    expect(past.code).toBe(2);
    expect(past.stderr).toContain('past --max-dead: 2 (max 1)');
    // dead rows are not owed
    expect((await health('--max-owed', '0')).code).toBe(0);
  });

  it('names the dead letter that holds rows of its ordering key back (pretty and --json)', async () => {
    const fired = await firePings(3);
    // The first two share an ordering key; the first is dead, so the second waits behind it.
    await onDeliveries(`ordering_key = 'order-7'`);
    const table = db.outboxOptions.schema
      ? `"${db.outboxOptions.schema}"."outbox_deliveries"`
      : '"outbox_deliveries"';
    const [[first]] = (await db.outboxOptions.sequelize.query(
      `SELECT min(id) AS id FROM ${table}`,
    )) as [{ id: string | number }[], unknown];
    await db.outboxOptions.sequelize.query(
      `UPDATE ${table} SET status = 'dead', attempts = 5, last_error = 'refused' WHERE id = ${first.id}`,
    );
    await db.outboxOptions.sequelize.query(
      `UPDATE ${table} SET ordering_key = 'order-8' WHERE id > ${Number(first.id) + 1}`,
    );
    const pretty = await health();
    expect(pretty.code).toBe(0);
    expect(pretty.stdout).toContain(
      'held back by dead letters (a later row of the same ordering key waits for each):',
    );
    expect(pretty.stdout).toContain(
      `  #${first.id} test.record  ordering key "order-7"  event ${fired[0].id}  holds back 1\n`,
    );
    const json = JSON.parse((await health('--json')).stdout);
    expect(json.heldBackBy).toEqual([
      {
        deliveryId: String(first.id),
        receiverKey: 'test.record',
        target: null,
        orderingKey: 'order-7',
        eventId: fired[0].id,
        heldBack: 1,
      },
    ]);
    // Requeued, it holds nothing back any more.
    await db.outboxOptions.sequelize.query(
      `UPDATE ${table} SET status = 'pending' WHERE id = ${first.id}`,
    );
    expect(JSON.parse((await health('--json')).stdout).heldBackBy).toEqual([]);
  });

  it('exits 2 past --max-lapsed', async () => {
    await firePings(1);
    const lapsed =
      dialect.name !== 'postgres' ? String(Date.now() - MINUTE) : `now() - interval '1 minute'`;
    const claimedAt =
      dialect.name !== 'postgres'
        ? String(Date.now() - 2 * MINUTE)
        : `now() - interval '2 minutes'`;
    await onDeliveries(
      `status = 'claimed', claimed_by = 'gone', claimed_at = ${claimedAt}, lease_until = ${lapsed}`,
    );
    const result = await health('--max-lapsed', '0', '--json');
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout)).toMatchObject({ lapsedLeases: 1, claimed: 1, owed: 1 });
    expect((await health('--max-lapsed', '1')).code).toBe(0);
  });

  it('refuses a duration without its unit (exit 1)', async () => {
    const result = await health('--max-oldest-age', '300');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('expected a duration with its unit');
  });

  it('exits 1 on a database without the outbox tables', async () => {
    const other = await openCliDatabase(dialect.name);
    try {
      if (dialect.name === 'sqlite') {
        await other.outboxOptions.sequelize.query('CREATE TABLE unrelated (id integer)');
      }
      const result = await runCliInProcess(['health', '-c', PING_CONFIG, ...other.args]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('the outbox tables are missing');
    } finally {
      await other.cleanup();
    }
  });

  it('documents the thresholds and the exit codes in --help', async () => {
    const result = await runCliInProcess(['health', '--help']);
    expect(result.code).toBe(0);
    for (const text of [
      '--max-owed',
      '--max-oldest-age',
      '--max-dead',
      '--max-lapsed',
      '--json',
      'Exit codes:',
      '2  read, and past at least one threshold',
    ])
      expect(result.stdout).toContain(text);
  });
});
