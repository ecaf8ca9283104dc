import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  DeliveryError,
  defineOutbox,
  event,
  type OutboxEventMap,
  PermanentFailure,
  receiver,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  captureLogger,
  freshPrefix,
  openOutbox,
  rowsOf,
  shortSleep,
  T0,
  testClock,
} from './support.js';

describeEachDialect('relay: observing the relay', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Signup = event({ schema: z.object({ user: z.string() }) });

  function config(onFailure?: () => void) {
    return defineOutbox({
      events: { 'crm.Signup': Signup },
      receivers: {
        'crm.welcome': receiver(Signup, { handle: () => {} }),
        'crm.flaky': receiver(Signup, {
          deliver: async () => {
            throw new Error('503');
          },
          onFailure,
        }),
        'crm.gone': receiver(Signup, {
          handle: () => {
            throw new PermanentFailure('410');
          },
        }),
      },
      settings: { backoff: { baseSeconds: 10, capSeconds: 10 } },
    });
  }

  it('the relay reports relay:delivered, relay:failed, relay:deadLettered and relay:orphaned', async () => {
    const tablePrefix = freshPrefix();
    const old = await openOutbox(
      db,
      defineOutbox({
        events: { 'crm.Signup': Signup },
        receivers: { 'crm.removed': receiver(Signup, { handle: () => {} }) },
      }),
      { tablePrefix },
    );
    await old.fire('crm.Signup', { user: 'old' });
    const clock = testClock();
    const outbox = await openOutbox(db, config(), { tablePrefix, clock: clock.now });
    await outbox.fire('crm.Signup', { user: 'ann' });

    const seen: { name: keyof OutboxEventMap; receiverKey: string; attempt?: number }[] = [];
    const failedAt: Date[] = [];
    outbox.on('relay:delivered', (e) => void seen.push({ name: 'relay:delivered', ...e }));
    outbox.on('relay:failed', (e) => {
      seen.push({ name: 'relay:failed', ...e });
      failedAt.push(e.nextAttemptAt);
    });
    outbox.on('relay:deadLettered', (e) => void seen.push({ name: 'relay:deadLettered', ...e }));
    outbox.on('relay:orphaned', (e) => void seen.push({ name: 'relay:orphaned', ...e }));
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });

    expect(
      seen.map((s) => `${s.name} ${s.receiverKey}${s.attempt ? ` #${s.attempt}` : ''}`).sort(),
    ).toEqual([
      'relay:deadLettered crm.gone #1',
      'relay:delivered crm.welcome #1',
      'relay:failed crm.flaky #1',
      'relay:orphaned crm.removed',
    ]);
    expect(failedAt).toEqual([new Date(T0.getTime() + 5_000)]);
  });

  it("every observer event about an event carries the event's UUID", async () => {
    const tablePrefix = freshPrefix();
    const old = await openOutbox(
      db,
      defineOutbox({
        events: { 'crm.Signup': Signup },
        receivers: { 'crm.removed': receiver(Signup, { handle: () => {} }) },
      }),
      { tablePrefix },
    );
    const orphan = await old.fire('crm.Signup', { user: 'old' });
    const outbox = await openOutbox(db, config(), { tablePrefix, clock: testClock().now });
    const fired = await outbox.fire('crm.Signup', { user: 'ann' });
    const ids: Record<string, string> = {};
    outbox.on('relay:delivered', (e) => {
      ids.delivered = e.eventId;
    });
    outbox.on('relay:failed', (e) => {
      ids.failed = e.eventId;
    });
    outbox.on('relay:deadLettered', (e) => {
      ids.deadLettered = e.eventId;
    });
    outbox.on('relay:orphaned', (e) => {
      ids.orphaned = e.eventId;
    });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(ids).toEqual({
      delivered: fired.id,
      failed: fired.id,
      deadLettered: fired.id,
      orphaned: orphan.id,
    });
  });

  it('a listener that throws is caught and logged, and never stops the relay', async () => {
    const logger = captureLogger();
    const outbox = await openOutbox(db, config(), { logger, clock: testClock().now });
    outbox.on('relay:delivered', () => {
      throw new Error('dashboard down');
    });
    outbox.on('relay:failed', () => {
      throw new Error('dashboard down');
    });
    await outbox.fire('crm.Signup', { user: 'ann' });
    const report = await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(report).toMatchObject({ succeeded: 1, failed: 1, dead: 1 });
    expect(logger.messages('error')).toEqual(
      expect.arrayContaining([
        'a listener of relay:delivered threw; ignored',
        'a listener of relay:failed threw; ignored',
      ]),
    );
    expect((await rowsOf(outbox, 'crm.welcome'))[0].status).toBe('succeeded');
  });

  it("a receiver's onFailure hook sees each failed attempt, and one that throws is logged and swallowed", async () => {
    const logger = captureLogger();
    const outbox = await openOutbox(
      db,
      config(() => {
        throw new Error('pager down');
      }),
      { logger, clock: testClock().now },
    );
    await outbox.fire('crm.Signup', { user: 'ann' });
    const report = await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(report.failed).toBe(1);
    expect(logger.messages('error')).toContain('onFailure of crm.flaky threw; ignored');
    expect((await rowsOf(outbox, 'crm.flaky'))[0]).toMatchObject({
      status: 'failed',
      attempts: 1,
    });
  });

  it("a logged failure carries a DeliveryError naming the delivery and chaining the receiver's error as its cause", async () => {
    const logger = captureLogger();
    const outbox = await openOutbox(db, config(), { clock: testClock().now, logger });
    await outbox.fire('crm.Signup', { user: 'ada' });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    const rows = await rowsOf(outbox, 'crm.flaky');
    const failed = logger.entries.find((e) => e.message.includes('to crm.flaky failed'));
    const failure = failed?.fields?.failure as DeliveryError;
    expect(failure).toBeInstanceOf(DeliveryError);
    expect(failure).toMatchObject({
      code: 'OUTBOX_DELIVERY',
      retriable: true,
      deliveryId: rows[0].id,
      receiverKey: 'crm.flaky',
    });
    expect(failure.cause).toBeInstanceOf(Error);
    expect((failure.cause as Error).message).toBe('503');
    const dead = logger.entries.find((e) => e.message.includes('to crm.gone is dead-lettered'));
    const deadFailure = dead?.fields?.failure as DeliveryError;
    expect(deadFailure).toMatchObject({ retriable: false, receiverKey: 'crm.gone' });
    expect(deadFailure.cause).toBeInstanceOf(PermanentFailure);
  });
});
