import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';

describeEachDialect('deliverOne()', (dialect) => {
  let db: TestDatabase;
  const seen: number[] = [];
  const Step = event({ schema: z.object({ n: z.number(), fail: z.boolean().default(false) }) });
  const config = defineOutbox({
    events: { 'acct.Step': Step },
    receivers: {
      'acct.ledger': receiver(Step, {
        handle: (e) => {
          if (e.payload.fail) throw new Error('ledger refused');
          seen.push(e.payload.n);
        },
      }),
    },
  });
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  async function open() {
    const outbox = createOutbox(config, {
      ...db.outboxOptions,
      tablePrefix: `one${Math.floor(Math.random() * 1e6)}_`,
      wakeup: null,
      logger: silentLogger,
      jitter: () => 0.5,
    });
    await outbox.migrate();
    const rowOf = async (sequence: string) =>
      (await runtimeOf(outbox).store.readDeliveries({ eventSequence: sequence }))[0];
    return { outbox, rowOf };
  }

  it('runs one owed delivery and records its outcome; a settled row is refused with null', async () => {
    const { outbox, rowOf } = await open();
    const fired = await outbox.fire('acct.Step', { n: 1 });
    const row = await rowOf(fired.sequence);
    expect(await outbox.deliverOne(row.id)).toBe('succeeded');
    expect(seen).toContain(1);
    expect(await outbox.deliverOne(row.id)).toBeNull();
    expect((await rowOf(fired.sequence)).status).toBe('succeeded');
  });

  it('a failure is recorded as failed, and the row is then refused while it waits out its backoff', async () => {
    const { outbox, rowOf } = await open();
    const fired = await outbox.fire('acct.Step', { n: 2, fail: true });
    const row = await rowOf(fired.sequence);
    expect(await outbox.deliverOne(row.id)).toBe('failed');
    expect(await rowOf(fired.sequence)).toMatchObject({ status: 'failed', attempts: 1 });
    expect(await outbox.deliverOne(row.id)).toBeNull();
  });

  it('a row waiting behind an earlier event of its ordering key is refused', async () => {
    const { outbox, rowOf } = await open();
    await outbox.fire('acct.Step', { n: 3 }, { orderingKey: 'k' });
    const later = await outbox.fire('acct.Step', { n: 4 }, { orderingKey: 'k' });
    expect(await outbox.deliverOne((await rowOf(later.sequence)).id)).toBeNull();
    expect(seen).not.toContain(4);
  });

  it('refuses an id that is not a row id', async () => {
    const { outbox } = await open();
    await expect(outbox.deliverOne('abc')).rejects.toThrow(/a string of digits/);
    expect(await outbox.deliverOne('999999')).toBeNull();
  });
});
