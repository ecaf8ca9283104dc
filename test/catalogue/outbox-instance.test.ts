import { afterAll, beforeAll, expect, expectTypeOf, it } from 'vitest';
import { AnyEvent, createOutbox, type ResolvedReceiver } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import { timingConfig } from './support.js';

describeEachDialect('an outbox describes what is declared', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('outbox.catalogue() works from the config alone, lanes, timing and patterns included', () => {
    const outbox = createOutbox(timingConfig(), db.outboxOptions);
    const catalogue = outbox.catalogue();
    const fanOut = catalogue.events
      .flatMap((e) => e.receivers)
      .find((r) => r.key === 'offers.fanOut');
    expect(fanOut).toMatchObject({
      lane: 'webhooks',
      targets: 'function tenantsOf',
      giveUpAfterSeconds: 21_600,
      location: null,
    });
    expect(catalogue.wildcardReceivers.map((r) => r.pattern)).toEqual([
      null,
      'library.*',
      'library.*',
      'offers.*',
    ]);
  });

  it('outbox.whatListensTo takes a topic pattern, and AnyEvent returns every wildcard', () => {
    const outbox = createOutbox(timingConfig(), db.outboxOptions);
    const byPattern = outbox.whatListensTo('library.*');
    expectTypeOf(byPattern).toEqualTypeOf<ResolvedReceiver[]>();
    expect(byPattern.map((r) => r.key)).toEqual(['library.audit', 'library.index']);
    expect(outbox.whatListensTo(AnyEvent)).toHaveLength(4);
    expect(outbox.listensFor('library.index')).toBeUndefined();
  });
});
