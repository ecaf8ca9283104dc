import type { Transaction } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineOutbox, event, type Outbox, receiver, ValidationError } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { assertFired } from '../../testing/index.js';
import { eventCount } from '../fire/support.js';
import { openOutbox, tableName } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

const Wide = event({ schema: z.object({ value: z.unknown() }) });

class Money {
  constructor(
    readonly amount: number,
    readonly currency: string,
  ) {}
}

/** 'ok ' and the high surrogate of an emoji: what `.slice()` leaves of `ok 😀`. */
const halfAnEmoji = 'ok 😀'.slice(0, 4);

const cases: readonly {
  readonly what: string;
  readonly value: unknown;
  readonly path: string;
  readonly says: string;
}[] = [
  {
    what: 'undefined inside an array',
    value: [1, undefined, 3],
    path: '.value[1]',
    says: 'is undefined inside an array',
  },
  {
    what: 'a class instance without toJSON',
    value: { price: new Money(1250, 'EUR') },
    path: '.value.price',
    says: 'is an instance of Money without toJSON()',
  },
  {
    what: 'an invalid Date',
    value: { at: new Date(Number.NaN) },
    path: '.value.at',
    says: 'is an invalid Date',
  },
  {
    what: 'a string holding an unpaired surrogate (half an emoji)',
    value: { title: halfAnEmoji },
    path: '.value.title',
    says: 'holds an unpaired UTF-16 surrogate',
  },
];

describeEachDialect('the codec refuses instead of changing values', (dialect) => {
  let db: TestDatabase;
  let outbox: Outbox<typeof config>;
  let business: string;
  let marks = 0;
  const config = defineOutbox({
    events: { 'misc.Wide': Wide },
    receivers: { 'bus.forward': receiver(Wide, { handle: () => {} }) },
  });

  beforeAll(async () => {
    db = await dialect.open();
    outbox = await openOutbox(db, config);
    business = tableName(db, 'business_row');
    await db.sequelize.query(`CREATE TABLE ${business} (name varchar(64))`);
  });
  afterAll(async () => {
    await outbox.close();
    await db.cleanup();
  });

  /**
   * Fire in a transaction and return the refusal; asserts nothing was written and the
   * caller's transaction is still usable (on PostgreSQL, not aborted: the next statement
   * in it works and commits).
   */
  async function refusedInTransaction(
    fire: (transaction: Transaction) => Promise<unknown>,
  ): Promise<ValidationError> {
    const before = await eventCount(outbox);
    marks += 1;
    const mark = `still usable ${marks}`;
    const error = await db.sequelize.transaction(async (transaction) => {
      const caught = await fire(transaction).then(
        () => undefined,
        (e: unknown) => e,
      );
      await db.sequelize.query(`INSERT INTO ${business} (name) VALUES ($1)`, {
        bind: [mark],
        transaction,
      });
      return caught;
    });
    expect(await eventCount(outbox)).toBe(before);
    const [rows] = (await db.sequelize.query(`SELECT name FROM ${business} WHERE name = $1`, {
      bind: [mark],
    })) as [unknown[], unknown];
    expect(rows).toHaveLength(1); // the caller's work committed
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }

  for (const c of cases) {
    it(`refuses ${c.what} in a payload, naming the path, writing nothing`, async () => {
      const error = await refusedInTransaction((transaction) =>
        outbox.fire('misc.Wide', { value: c.value }, { transaction }),
      );
      expect(error.path).toBe(`payload${c.path}`);
      expect(error.message).toContain(`fire(): misc.Wide payload${c.path} ${c.says}`);
    });

    it(`refuses ${c.what} in headers, naming the path, writing nothing`, async () => {
      const error = await refusedInTransaction((transaction) =>
        outbox.fire(
          'misc.Wide',
          { value: 1 },
          // @ts-expect-error: not a JSON value, on purpose
          { transaction, headers: { value: c.value } },
        ),
      );
      expect(error.path).toBe(`headers${c.path}`);
      expect(error.message).toContain(`headers${c.path} ${c.says}`);
    });
  }

  it('refuses one bad message of a fireMany before writing any', async () => {
    const before = await eventCount(outbox);
    const refused = outbox.fireMany([
      { name: 'misc.Wide', payload: { value: 'fine' } },
      { name: 'misc.Wide', payload: { value: [undefined] } },
    ]);
    await expect(refused).rejects.toBeInstanceOf(ValidationError);
    await expect(refused).rejects.toThrow('fireMany()[1]: misc.Wide payload.value[0] is undefined');
    expect(await eventCount(outbox)).toBe(before);
  });

  it('refuses a payload its schema would refuse once stored (what toJSON said, an undefined required key)', async () => {
    const strict = await openOutbox(
      db,
      defineOutbox({
        events: {
          // A decimal type: an object with toJSON, stored as the text it gives.
          'a.Priced': event({
            schema: z.object({
              price: z.custom<{ toJSON(): string }>((v) => typeof v === 'object' && v !== null),
            }),
          }),
          'a.Coerced': event({ schema: z.object({ at: z.coerce.date() }) }),
          'misc.Wide': Wide,
        },
      }),
    );
    try {
      const priced = await strict
        .fire('a.Priced', { price: { toJSON: () => '12.50' } })
        .catch((e: unknown) => e as ValidationError);
      expect(priced).toBeInstanceOf(ValidationError);
      expect((priced as ValidationError).path).toBe('payload.price');
      expect((priced as ValidationError).message).toContain(
        'fire(): a.Priced payload.price would not decode once stored',
      );
      const missing = await strict
        .fire('misc.Wide', { value: undefined })
        .catch((e: unknown) => e as ValidationError);
      expect(missing).toBeInstanceOf(ValidationError);
      expect((missing as ValidationError).path).toBe('payload.value');
      expect(await eventCount(strict)).toBe(0);

      // z.coerce.date() reads the ISO text back as a Date: accepted, and decodes equal.
      const at = new Date('2031-01-02T03:04:05.000Z');
      await strict.fire('a.Coerced', { at });
      expect(await assertFired(strict, 'a.Coerced')).toEqual([{ at }]);
    } finally {
      await strict.close();
    }
  });
});
