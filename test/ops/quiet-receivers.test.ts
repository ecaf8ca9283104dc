import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { AnyEvent, defineOutbox, event, receiver, ValidationError } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { freshPrefix, openOutbox, T0, tableName, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

const DAY = 86_400_000;
const at = (ms: number) => new Date(T0.getTime() + ms);

describeEachDialect('outbox.quietReceivers()', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const OrderPlaced = event({ schema: z.object({ orderId: z.string() }) });
  const UserJoined = event({ schema: z.object({ userId: z.string() }) });

  const config = defineOutbox({
    events: { 'shop.OrderPlaced': OrderPlaced, 'users.UserJoined': UserJoined },
    receivers: {
      'mail.send': receiver(OrderPlaced, { handle: () => {} }),
      'users.welcome': receiver(UserJoined, { handle: () => {} }),
      'audit.everything': receiver(AnyEvent, { handle: () => {} }),
      'log.inline': receiver(OrderPlaced, { mode: 'inline', handle: () => {} }),
      'log.after': receiver(OrderPlaced, { mode: 'onCommit', handle: () => {} }),
    },
    settings: { retentionDays: 7 },
  });

  async function setup() {
    const clock = testClock();
    const tablePrefix = freshPrefix();
    const outbox = await openOutbox(db, config, { clock: clock.now, tablePrefix });
    /** Run SQL on the outbox's tables: `{deliveries}`, `{events}`, `{lastSuccess}` are replaced. */
    const sql = (text: string, bind: unknown[] = []) =>
      db.sequelize.query(
        text
          .replaceAll('{deliveries}', tableName(db, `${tablePrefix}deliveries`))
          .replaceAll('{events}', tableName(db, `${tablePrefix}events`))
          .replaceAll('{lastSuccess}', tableName(db, `${tablePrefix}receiver_last_success`)),
        { bind: bind.length > 0 ? bind : undefined },
      );
    /** A timestamp as the dialect stores it. */
    const stamp = (d: Date) => (dialect.name === 'sqlite' ? d.getTime() : d);
    return { clock, outbox, sql, stamp };
  }

  it('lists a receiver that never ran, with lastSucceededAt null; only durable receivers', async () => {
    const { outbox } = await setup();
    expect(await outbox.quietReceivers({ now: T0 })).toEqual([
      { receiverKey: 'audit.everything', event: undefined, lastSucceededAt: null },
      { receiverKey: 'mail.send', event: 'shop.OrderPlaced', lastSucceededAt: null },
      { receiverKey: 'users.welcome', event: 'users.UserJoined', lastSucceededAt: null },
    ]);
  });

  it('leaves out a receiver that succeeded inside the window, and lists it once the window has passed', async () => {
    const { outbox } = await setup();
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    await outbox.deliverPending({ now: T0 });

    const soon = await outbox.quietReceivers({ now: at(DAY / 2), within: { days: 1 } });
    expect(soon.map((q) => q.receiverKey)).toEqual(['users.welcome']);

    const later = await outbox.quietReceivers({ now: at(2 * DAY), within: { days: 1 } });
    // never-run first, then the longest quiet, then by key
    expect(later).toEqual([
      { receiverKey: 'users.welcome', event: 'users.UserJoined', lastSucceededAt: null },
      { receiverKey: 'audit.everything', event: undefined, lastSucceededAt: T0 },
      { receiverKey: 'mail.send', event: 'shop.OrderPlaced', lastSucceededAt: T0 },
    ]);
  });

  it('the window defaults to retentionDays', async () => {
    const { outbox } = await setup();
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    await outbox.deliverPending({ now: T0 });
    const keys = async (now: Date) =>
      (await outbox.quietReceivers({ now })).map((q) => q.receiverKey);
    expect(await keys(at(6 * DAY))).toEqual(['users.welcome']);
    expect(await keys(at(8 * DAY))).toEqual(['users.welcome', 'audit.everything', 'mail.send']);
  });

  it('reads succeeded_at with no status filter: a replayed row still tells when it last ran', async () => {
    const { outbox, sql } = await setup();
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    await outbox.deliverPending({ now: T0 });
    // what a replay leaves: the row owed again, its completion cleared
    await sql(`UPDATE {deliveries} SET status = 'pending', completed_at = NULL`);
    const quiet = await outbox.quietReceivers({ now: at(2 * DAY), within: { days: 1 } });
    expect(quiet.find((q) => q.receiverKey === 'mail.send')?.lastSucceededAt).toEqual(T0);
  });

  it('a receiver whose every delivery failed reads as never having succeeded', async () => {
    const { outbox, sql } = await setup();
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    await sql(`UPDATE {deliveries} SET status = 'dead', attempts = 3, last_error = 'boom'`);
    const quiet = await outbox.quietReceivers({ now: T0, within: { days: 1 } });
    expect(quiet.find((q) => q.receiverKey === 'mail.send')?.lastSucceededAt).toBeNull();
  });

  it('the last success survives pruning through the last-success table', async () => {
    const { outbox, sql, stamp } = await setup();
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    await outbox.deliverPending({ now: T0 });
    // what the prune does: delete the rows, keep each receiver's newest success
    await sql(`INSERT INTO {lastSuccess} (receiver_key, succeeded_at) VALUES ($1, $2)`, [
      'mail.send',
      stamp(T0),
    ]);
    await sql('DELETE FROM {deliveries}');
    await sql('DELETE FROM {events}');

    const quiet = await outbox.quietReceivers({ now: at(2 * DAY), within: { days: 1 } });
    expect(quiet.find((q) => q.receiverKey === 'mail.send')?.lastSucceededAt).toEqual(T0);
    // audit.everything's rows went too, with nothing kept: it reads as never
    expect(quiet.find((q) => q.receiverKey === 'audit.everything')?.lastSucceededAt).toBeNull();
    // and inside the window the kept success is enough to leave it out
    const inside = await outbox.quietReceivers({ now: at(DAY / 2), within: { days: 1 } });
    expect(inside.map((q) => q.receiverKey)).not.toContain('mail.send');
  });

  it('answers the later of the live rows and the last-success table', async () => {
    const { outbox, sql, stamp } = await setup();
    await sql(`INSERT INTO {lastSuccess} (receiver_key, succeeded_at) VALUES ($1, $2), ($3, $4)`, [
      'mail.send',
      stamp(at(-3 * DAY)),
      'users.welcome',
      stamp(at(DAY)),
    ]);
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    await outbox.fire('users.UserJoined', { userId: 'u1' });
    await outbox.deliverPending({ now: T0 });

    const quiet = await outbox.quietReceivers({ now: at(10 * DAY), within: { days: 1 } });
    const last = Object.fromEntries(quiet.map((q) => [q.receiverKey, q.lastSucceededAt]));
    expect(last['mail.send']).toEqual(T0); // the live row is newer than the kept one
    expect(last['users.welcome']).toEqual(at(DAY)); // the kept one is newer than the live row
  });

  it('refuses a within that is not a duration longer than zero, naming it', async () => {
    const { outbox } = await setup();
    await expect(
      outbox.quietReceivers({ within: { days: 0 } }),
    ).rejects.toThrowErrorMatchingInlineSnapshot(
      `[ValidationError: outbox.quietReceivers({ within }) must be longer than zero, e.g. { hours: 48 } (got {"days":0})]`,
    );
    await expect(
      outbox.quietReceivers({ within: 3600 as unknown as { seconds: number } }),
    ).rejects.toThrow(ValidationError);
  });
});
