import type { Sequelize, Transaction } from 'sequelize';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import {
  createOutbox,
  defineOutbox,
  event,
  type Outbox,
  receiver,
  silentLogger,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { ClaimToken, OutboxStore } from '../../src/storage/store.js';
import { whenCommitted } from '../../src/transaction/when-committed.js';
import { postgresTestSchema, type TestDatabase } from '../../testing/databases.js';
import { capturingStatements } from '../relay/support.js';
import { describeEachDialect, sqlOf } from '../support/dialects.js';

/**
 * `handleAndAcknowledge`: a handler's work and its row's acknowledgement commit together
 * or not at all. The same expectations for SQLite (Sequelize's own transaction) and
 * PostgreSQL (the lean transaction: BEGIN with the first statement, acknowledgement and
 * COMMIT in one round trip), then PostgreSQL's round trips counted.
 */
const config = defineOutbox({
  events: { 'a.Happened': event({ schema: z.object({ n: z.number() }) }) },
  receivers: { 'r.one': receiver('a.Happened', { handle: () => {} }) },
});

const T0 = new Date('2030-01-01T00:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
let seq = 0;
const token = (workerId: string): ClaimToken => ({
  workerId,
  claimedAt: new Date(T0.getTime() + ++seq),
});

interface Fixture {
  db: TestDatabase;
  outbox: Outbox;
  store: OutboxStore;
  work: string;
  claimOne(t: ClaimToken): Promise<string>;
  statusOf(id: string): Promise<string | undefined>;
  workRows(): Promise<number[]>;
}

let prefix = 0;
async function fixture(db: TestDatabase, sequelize: Sequelize = db.sequelize): Promise<Fixture> {
  const p = `hx${++prefix}_`;
  const outbox = createOutbox(config, {
    ...db.outboxOptions,
    sequelize,
    tablePrefix: p,
    wakeup: null,
    logger: silentLogger,
    clock: () => T0,
  });
  await outbox.migrate();
  const schema = db.outboxOptions.schema;
  const work = schema ? `"${schema}".${p}work` : `${p}work`;
  await sqlOf(sequelize).run(`CREATE TABLE ${work} (n INTEGER NOT NULL)`, []);
  const store = runtimeOf(outbox).store;
  return {
    db,
    outbox,
    store,
    work,
    async claimOne(t) {
      await outbox.fire('a.Happened', { n: 1 });
      const [row] = await store.claim({ token: t, now: at(1), leaseUntil: at(61), limit: 1 });
      return row.id;
    },
    async statusOf(id) {
      return (await store.readDeliveries({})).find((r) => r.id === id)?.status;
    },
    async workRows() {
      const rows = await sqlOf(sequelize).select<{ n: number }>(
        `SELECT n FROM ${work} ORDER BY n`,
        [],
      );
      return rows.map((r) => Number(r.n));
    },
  };
}

const insert = (f: Fixture, n: number, transaction: Transaction) =>
  sqlOf(f.db.sequelize).run(`INSERT INTO ${f.work} (n) VALUES (${n})`, [], transaction);

describeEachDialect('a handler transaction', (dialect) => {
  let db: TestDatabase;
  let f: Fixture;
  beforeAll(async () => {
    db = await dialect.open();
  });
  beforeEach(async () => {
    f = await fixture(db);
  });
  afterAll(() => db.cleanup());

  it('commits the work with the acknowledgement', async () => {
    const t = token('w');
    const id = await f.claimOne(t);
    const verdict = await f.store.handleAndAcknowledge((tx) => insert(f, 1, tx).then(() => {}), {
      id,
      token: t,
      at: () => at(2),
    });
    expect(verdict).toBe('acknowledged');
    expect(await f.statusOf(id)).toBe('succeeded');
    expect(await f.workRows()).toEqual([1]);
  });

  it('acknowledges a handler that wrote nothing', async () => {
    const t = token('w');
    const id = await f.claimOne(t);
    expect(
      await f.store.handleAndAcknowledge(async () => {}, { id, token: t, at: () => at(2) }),
    ).toBe('acknowledged');
    const row = (await f.store.readDeliveries({})).find((r) => r.id === id);
    expect(row).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(row?.succeededAt?.toISOString()).toBe(at(2).toISOString());
  });

  it('rolls the work back when the claim was lost', async () => {
    const id = await f.claimOne(token('other'));
    const verdict = await f.store.handleAndAcknowledge((tx) => insert(f, 1, tx).then(() => {}), {
      id,
      token: token('w'),
      at: () => at(2),
    });
    expect(verdict).toBe('lost');
    expect(await f.workRows()).toEqual([]);
    expect(await f.statusOf(id)).toBe('claimed');
  });

  it('says lost, and changes nothing, for a handler that wrote nothing and lost its claim', async () => {
    const id = await f.claimOne(token('other'));
    expect(
      await f.store.handleAndAcknowledge(async () => {}, {
        id,
        token: token('w'),
        at: () => at(2),
      }),
    ).toBe('lost');
    expect(await f.statusOf(id)).toBe('claimed');
  });

  it('rolls the work back and rethrows when the work fails, and the connection is reusable', async () => {
    const t = token('w');
    const id = await f.claimOne(t);
    for (let i = 0; i < 12; i++) {
      await expect(
        f.store.handleAndAcknowledge(
          async (tx) => {
            await insert(f, i, tx);
            throw new Error(`boom ${i}`);
          },
          { id, token: t, at: () => at(2) },
        ),
      ).rejects.toThrow(`boom ${i}`);
    }
    expect(await f.workRows()).toEqual([]);
    expect(await f.statusOf(id)).toBe('claimed');
    expect(
      await f.store.handleAndAcknowledge((tx) => insert(f, 7, tx).then(() => {}), {
        id,
        token: t,
        at: () => at(3),
      }),
    ).toBe('acknowledged');
    expect(await f.workRows()).toEqual([7]);
  });

  it('runs afterCommit hooks and work arranged with whenCommitted after the commit, not after a rollback', async () => {
    const seen: string[] = [];
    const t = token('w');
    const id = await f.claimOne(t);
    await f.store.handleAndAcknowledge(
      async (tx) => {
        await insert(f, 1, tx);
        tx.afterCommit(() => void seen.push('hook'));
        whenCommitted(tx, () => seen.push('whenCommitted'));
      },
      { id, token: t, at: () => at(2) },
    );
    expect(seen).toEqual(['hook', 'whenCommitted']);

    const lostId = await f.claimOne(token('other'));
    await f.store.handleAndAcknowledge(
      async (tx) => {
        await insert(f, 2, tx);
        tx.afterCommit(() => void seen.push('lost hook'));
        whenCommitted(tx, () => seen.push('lost whenCommitted'));
      },
      { id: lostId, token: token('w'), at: () => at(2) },
    );
    expect(seen).toEqual(['hook', 'whenCommitted']);
  });

  it('keeps a savepoint the handler rolled back out of the commit', async () => {
    const t = token('w');
    const id = await f.claimOne(t);
    await f.store.handleAndAcknowledge(
      async (tx) => {
        await insert(f, 1, tx);
        await db.sequelize
          .transaction({ transaction: tx }, async (sp) => {
            await insert(f, 2, sp);
            throw new Error('undo the savepoint');
          })
          .catch(() => {});
        await db.sequelize.transaction({ transaction: tx }, (sp) => insert(f, 3, sp));
      },
      { id, token: t, at: () => at(2) },
    );
    expect(await f.workRows()).toEqual([1, 3]);
    expect(await f.statusOf(id)).toBe('succeeded');
  });

  it('commits work whose first statement opens a savepoint', async () => {
    const t = token('w');
    const id = await f.claimOne(t);
    await f.store.handleAndAcknowledge(
      async (tx) => {
        await db.sequelize.transaction({ transaction: tx }, (sp) => insert(f, 4, sp));
        await insert(f, 5, tx);
      },
      { id, token: t, at: () => at(2) },
    );
    expect(await f.workRows()).toEqual([4, 5]);
    expect(await f.statusOf(id)).toBe('succeeded');
  });

  it('commits the events a handler fires in its transaction with the acknowledgement, and none when the claim was lost', async () => {
    const t = token('w');
    const id = await f.claimOne(t);
    await f.store.handleAndAcknowledge(
      async (tx) => {
        await f.outbox.fire('a.Happened', { n: 2 }, { transaction: tx });
      },
      { id, token: t, at: () => at(2) },
    );
    const lostId = await f.claimOne(token('other'));
    expect(
      await f.store.handleAndAcknowledge(
        async (tx) => {
          await f.outbox.fire('a.Happened', { n: 3 }, { transaction: tx });
        },
        { id: lostId, token: token('w'), at: () => at(2) },
      ),
    ).toBe('lost');
    const fired = (await f.store.readEvents({})).map((e) => JSON.stringify(e.payload));
    expect(fired).toHaveLength(3);
    expect(fired.filter((p) => p.includes('3'))).toEqual([]);
    expect(fired.filter((p) => p.includes('2'))).toHaveLength(1);
    expect(await f.statusOf(id)).toBe('succeeded');
  });

  it('refuses a handler that ended its transaction itself, and acknowledges nothing', async () => {
    const t = token('w');
    const id = await f.claimOne(t);
    await expect(
      f.store.handleAndAcknowledge(
        async (tx) => {
          await insert(f, 1, tx);
          await tx.rollback();
        },
        { id, token: t, at: () => at(2) },
      ),
    ).rejects.toThrow();
    expect(await f.statusOf(id)).toBe('claimed');
    expect(await f.workRows()).toEqual([]);
  });
});

describe.skipIf(!inject('pgAvailable'))('a handler transaction on PostgreSQL [postgres]', () => {
  let db: TestDatabase;
  let f: Fixture;
  beforeAll(async () => {
    db = await postgresTestSchema();
  });
  beforeEach(async () => {
    f = await fixture(db);
  });
  afterAll(() => db.cleanup());

  it('costs one statement for a handler that wrote nothing', async () => {
    const t = token('w');
    const id = await f.claimOne(t);
    const statements = await capturingStatements(db.sequelize, () =>
      f.store.handleAndAcknowledge(async () => {}, { id, token: t, at: () => at(2) }),
    );
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatch(/UPDATE\s+\S*deliveries/);
  });

  it('groups the acknowledgements of handlers that wrote nothing and end together: one statement for those that waited, each row its own verdict', async () => {
    const t = token('w');
    await f.outbox.fireMany(
      Array.from({ length: 6 }, (_, n) => ({ name: 'a.Happened' as const, payload: { n } })),
    );
    const rows = await f.store.claim({ token: t, now: at(1), leaseUntil: at(61), limit: 6 });
    expect(rows).toHaveLength(6);
    // Another worker took the fourth row over (its lease had lapsed, say).
    const other = token('other');
    await f.db.sequelize.query(
      `UPDATE ${f.work.replace(/work$/, 'deliveries')} SET claimed_by = 'other', claimed_at = $1 WHERE id = $2`,
      { bind: [other.claimedAt, rows[3].id] },
    );
    let verdicts: string[] = [];
    const statements = await capturingStatements(db.sequelize, async () => {
      verdicts = await Promise.all(
        rows.map((r, i) =>
          f.store.handleAndAcknowledge(async () => {}, { id: r.id, token: t, at: () => at(2 + i) }),
        ),
      );
    });
    expect(verdicts).toEqual([
      'acknowledged',
      'acknowledged',
      'acknowledged',
      'lost',
      'acknowledged',
      'acknowledged',
    ]);
    // The first alone, at once; the five that ended while it was in flight, together.
    expect(statements).toHaveLength(2);
    for (const text of statements) expect(text).toMatch(/UPDATE\s+\S*deliveries[\s\S]*RETURNING/);
    const after = await f.store.readDeliveries({});
    expect(after.map((r) => r.status)).toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
      'claimed',
      'succeeded',
      'succeeded',
    ]);
    // A group's rows are recorded at the latest of their times; the first went alone.
    expect(after[0].succeededAt?.toISOString()).toBe(at(2).toISOString());
    expect(after[5].succeededAt?.toISOString()).toBe(at(7).toISOString());
    expect(after[1].succeededAt?.toISOString()).toBe(at(7).toISOString());
  });

  it('sends BEGIN with the first statement and the acknowledgement with COMMIT', async () => {
    const t = token('w');
    const id = await f.claimOne(t);
    const statements = await capturingStatements(db.sequelize, () =>
      f.store.handleAndAcknowledge((tx) => insert(f, 1, tx).then(() => {}), {
        id,
        token: t,
        at: () => at(2),
      }),
    );
    expect(statements.map((s) => s.replace(/^Executing \([^)]*\): /, '').trim())).toEqual([
      'START TRANSACTION',
      `INSERT INTO ${f.work} (n) VALUES (1)`,
      expect.stringMatching(/UPDATE[\s\S]*deliveries[\s\S]*;\s*COMMIT$/),
    ]);
  });

  /**
   * A fixture on a Sequelize of its own with a pool of ONE connection, whose acquire gives up
   * after `acquireMs` (a connection held where it should not be times out), and one row
   * claimed under a token; closed after `work`.
   */
  async function onOneConnection(
    acquireMs: number,
    work: (g: Fixture, single: Sequelize, id: string, t: ClaimToken) => Promise<void>,
  ): Promise<void> {
    const { Sequelize } = await import('sequelize');
    const single = new Sequelize(db.url, { logging: false, pool: { max: 1, acquire: acquireMs } });
    try {
      const g = await fixture(db, single);
      const t = token('w');
      await work(g, single, await g.claimOne(t), t);
    } finally {
      await single.close();
    }
  }

  it('holds no pool connection while a handler that writes nothing runs', async () => {
    await onOneConnection(2000, async (g, single, id, t) => {
      let outside: unknown;
      const verdict = await g.store.handleAndAcknowledge(
        async () => {
          // The handler's own query outside its transaction (an audit read, say) needs the
          // pool's only connection.
          const [rows] = (await single.query('SELECT 41 + 1 AS n')) as [{ n: number }[], unknown];
          outside = rows[0].n;
        },
        { id, token: t, at: () => at(2) },
      );
      expect(verdict).toBe('acknowledged');
      expect(outside).toBe(42);
      expect(await g.statusOf(id)).toBe('succeeded');
    });
  });

  it('takes its connection at the first statement, after the handler started', async () => {
    await onOneConnection(5000, async (g, single, id, t) => {
      // Another transaction holds the only connection when the handler starts; the handler
      // starts anyway, and its first statement waits until that transaction commits.
      const order: string[] = [];
      let release!: () => void;
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      let held!: () => void;
      const holds = new Promise<void>((resolve) => {
        held = resolve;
      });
      const holding = single.transaction(async () => {
        order.push('outside holds');
        held();
        await released;
        order.push('outside commits');
      });
      await holds;
      const handled = g.store.handleAndAcknowledge(
        async (tx) => {
          order.push('handler starts');
          release();
          await insert(g, 6, tx);
          order.push('handler wrote');
        },
        { id, token: t, at: () => at(2) },
      );
      await holding;
      expect(await handled).toBe('acknowledged');
      expect(order).toEqual([
        'outside holds',
        'handler starts',
        'outside commits',
        'handler wrote',
      ]);
      expect(await g.workRows()).toEqual([6]);
    });
  });

  it('rejects, with nothing committed, when the COMMIT itself fails (a deferred constraint)', async () => {
    const s = `"${db.outboxOptions.schema}"`;
    await db.sequelize.query(
      `CREATE TABLE ${s}.hx_deferred (n int, CONSTRAINT hx_unique UNIQUE (n) DEFERRABLE INITIALLY DEFERRED)`,
    );
    const t = token('w');
    const id = await f.claimOne(t);
    await expect(
      f.store.handleAndAcknowledge(
        async (tx) => {
          await db.sequelize.query(`INSERT INTO ${s}.hx_deferred VALUES (1), (1)`, {
            transaction: tx,
          });
        },
        { id, token: t, at: () => at(2) },
      ),
    ).rejects.toThrow(/hx_unique/);
    expect(await f.statusOf(id)).toBe('claimed');
    const [rows] = await db.sequelize.query(`SELECT * FROM ${s}.hx_deferred`);
    expect(rows).toEqual([]);
  });

  it("opens the handler's transaction at the instance's isolation level (Sequelize's own path)", async () => {
    const { Sequelize } = await import('sequelize');
    const serializable = new Sequelize(db.url, {
      logging: false,
      isolationLevel: 'SERIALIZABLE',
    });
    try {
      const g = await fixture(db, serializable);
      const t = token('w');
      const id = await g.claimOne(t);
      let level: unknown;
      await g.store.handleAndAcknowledge(
        async (tx) => {
          const [rows] = (await serializable.query(
            `SELECT current_setting('transaction_isolation') AS level`,
            { transaction: tx },
          )) as [{ level: string }[], unknown];
          level = rows[0].level;
        },
        { id, token: t, at: () => at(2) },
      );
      expect(level).toBe('serializable');
      expect(await g.statusOf(id)).toBe('succeeded');
    } finally {
      await serializable.close();
    }
  });
});
