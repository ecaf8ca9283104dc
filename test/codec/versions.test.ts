import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type DeliveryFailure,
  defineOutbox,
  event,
  type JsonValue,
  type OutboxEvent,
  PayloadDecodeError,
  PayloadUpgradeFailed,
  receiver,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { assertFired, drainOutbox } from '../../testing/index.js';
import { freshPrefix, openOutbox, rowsOf } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

/** Version 1 of a sign-up: one `name`. */
const SignupV1 = z.object({ email: z.string(), name: z.string() });
/** Version 2 split the name in two: a breaking change, hence the version bump. */
const SignupV2 = z.object({ email: z.string(), firstName: z.string(), lastName: z.string() });

/** v1 → v2 as version 2 would have written it. */
function splitName(payload: JsonValue, fromVersion: number): unknown {
  const p = payload as { email: string; name: string };
  if (fromVersion !== 1) throw new Error(`no upgrade from v${fromVersion}`);
  const [firstName, ...rest] = p.name.split(' ');
  return { email: p.email, firstName, lastName: rest.join(' ') };
}

/** A config of `shop.Signup` at some version, whose handler records what it was handed. */
function signupConfig(
  definition: ReturnType<typeof event>,
  seen: OutboxEvent[],
  failures: DeliveryFailure[] = [],
) {
  return defineOutbox({
    events: { 'shop.Signup': definition },
    receivers: {
      'mail.welcome': receiver(definition, {
        handle: (e) => void seen.push(e),
        onFailure: (f) => void failures.push(f),
        maxAttempts: 5,
      }),
    },
  });
}

describeEachDialect('versions: older rows are upgraded in the one decoder', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  /** An outbox at v1 and one at v2 over the same tables: a deploy between two fires. */
  async function deployed(v2: ReturnType<typeof event>, v1 = event({ schema: SignupV1 })) {
    const tablePrefix = freshPrefix();
    const seen: OutboxEvent[] = [];
    const failures: DeliveryFailure[] = [];
    const old = await openOutbox(db, signupConfig(v1, [], []), { tablePrefix });
    const current = await openOutbox(db, signupConfig(v2, seen, failures), { tablePrefix });
    return {
      old,
      current,
      seen,
      failures,
      close: async () => {
        await old.close();
        await current.close();
      },
    };
  }

  it('an older row is upgraded before decoding, and is handed over at the declared version', async () => {
    const calls: [JsonValue, number][] = [];
    const d = await deployed(
      event({
        schema: SignupV2,
        version: 2,
        upgrade: (payload, from) => {
          calls.push([structuredClone(payload), from]);
          return splitName(payload, from);
        },
      }),
    );
    try {
      await d.old.fire('shop.Signup', { email: 'a@x.io', name: 'Ada King Lovelace' });
      expect(await drainOutbox(d.current)).toMatchObject({ succeeded: 1 });
      expect(calls).toEqual([[{ email: 'a@x.io', name: 'Ada King Lovelace' }, 1]]);
      expect(d.seen).toHaveLength(1);
      expect(d.seen[0].payload).toEqual({
        email: 'a@x.io',
        firstName: 'Ada',
        lastName: 'King Lovelace',
      });
      expect(d.seen[0].version).toBe(2);
    } finally {
      await d.close();
    }
  });

  it('a row of the current version never passes through upgrade', async () => {
    let called = 0;
    const d = await deployed(
      event({
        schema: SignupV2,
        version: 2,
        upgrade: (p, from) => {
          called += 1;
          return splitName(p, from);
        },
      }),
    );
    try {
      await d.current.fire('shop.Signup', { email: 'b@x.io', firstName: 'B', lastName: 'C' });
      await drainOutbox(d.current);
      expect(called).toBe(0);
      expect(d.seen.map((e) => [e.version, e.payload])).toEqual([
        [2, { email: 'b@x.io', firstName: 'B', lastName: 'C' }],
      ]);
    } finally {
      await d.close();
    }
  });

  it("fire()'s idempotent re-read and assertFired upgrade through the same decoder", async () => {
    const d = await deployed(event({ schema: SignupV2, version: 2, upgrade: splitName }));
    try {
      await d.old.fire(
        'shop.Signup',
        { email: 'c@x.io', name: 'Grace Hopper' },
        { idempotencyKey: 'signup:c' },
      );
      const again = await d.current.fire(
        'shop.Signup',
        { email: 'c@x.io', firstName: 'G', lastName: 'H' },
        { idempotencyKey: 'signup:c' },
      );
      expect(again).toMatchObject({
        duplicate: true,
        version: 2,
        payload: { email: 'c@x.io', firstName: 'Grace', lastName: 'Hopper' },
      });
      expect(await assertFired(d.current, 'shop.Signup', { times: 1 })).toEqual([
        { email: 'c@x.io', firstName: 'Grace', lastName: 'Hopper' },
      ]);
    } finally {
      await d.close();
    }
  });

  it('a failing upgrade dead-letters with PayloadUpgradeFailed naming both versions', async () => {
    const d = await deployed(
      event({
        schema: SignupV2,
        version: 2,
        upgrade: () => {
          throw new Error('cannot split a name of one word');
        },
      }),
    );
    try {
      const fired = await d.old.fire(
        'shop.Signup',
        { email: 'd@x.io', name: 'Cher' },
        { idempotencyKey: 'signup:d' },
      );
      // Dead at the first attempt, though the budget is five.
      expect(await drainOutbox(d.current)).toMatchObject({ dead: 1, failed: 0, succeeded: 0 });
      const [row] = await rowsOf(d.current, 'mail.welcome');
      expect(row).toMatchObject({ status: 'dead', attempts: 1 });
      expect(row.lastError).toBe(
        `PayloadUpgradeFailed: upgrade of shop.Signup from v1 to v2 failed for event ${fired.id}: cannot split a name of one word (caused by Error: cannot split a name of one word)`,
      );
      expect(d.failures).toMatchObject([
        { status: 'dead', attempt: 1, receiverKey: 'mail.welcome' },
      ]);
      expect(d.seen).toEqual([]);

      // The same error, with its fields, wherever the row is decoded: here fire()'s re-read.
      const error = await d.current
        .fire(
          'shop.Signup',
          { email: 'd@x.io', firstName: 'Cher', lastName: '' },
          { idempotencyKey: 'signup:d' },
        )
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PayloadUpgradeFailed);
      expect(error).toMatchObject({
        code: 'OUTBOX_PAYLOAD_UPGRADE',
        eventName: 'shop.Signup',
        fromVersion: 1,
        toVersion: 2,
        eventId: fired.id,
        retriable: false,
      });
      expect((error as Error).cause).toBeInstanceOf(Error);

      // assertFired fails as an assertion, the upgrade failure its cause
      const asserted = await assertFired(d.current, 'shop.Signup').catch((e: unknown) => e);
      expect((asserted as Error).name).toBe('OutboxAssertionError');
      expect((asserted as Error).message).toMatch(
        /^assertFired: shop\.Signup event .* does not decode: upgrade of shop\.Signup from v1 to v2 failed/,
      );
      expect((asserted as Error).cause).toBeInstanceOf(PayloadUpgradeFailed);
    } finally {
      await d.close();
    }
  });

  it('an upgrade answering with a promise is refused as a PayloadUpgradeFailed: it must be synchronous', async () => {
    const d = await deployed(
      event({
        schema: SignupV2,
        version: 2,
        upgrade: async (p, from) => splitName(p, from),
      }),
    );
    try {
      await d.old.fire('shop.Signup', { email: 'e@x.io', name: 'Alan Turing' });
      expect(await drainOutbox(d.current)).toMatchObject({ dead: 1 });
      const [row] = await rowsOf(d.current, 'mail.welcome');
      expect(row).toMatchObject({ status: 'dead', attempts: 1 });
      expect(row.lastError).toMatch(
        /from v1 to v2 failed .*: the hook returned a promise; upgrade must be synchronous$/,
      );
    } finally {
      await d.close();
    }
  });

  it('an upgraded payload its schema refuses is a PayloadDecodeError saying it was upgraded, an ordinary failure', async () => {
    const d = await deployed(
      event({ schema: SignupV2, version: 2, upgrade: (p) => ({ ...(p as object) }) }),
    );
    try {
      await d.old.fire('shop.Signup', { email: 'f@x.io', name: 'Edsger Dijkstra' });
      expect(await drainOutbox(d.current, { limit: 1 })).toMatchObject({ failed: 1 });
      const [row] = await rowsOf(d.current, 'mail.welcome');
      expect(row).toMatchObject({ status: 'failed', attempts: 1 });
      expect(row.lastError).toMatch(
        /^PayloadDecodeError: stored payload of shop\.Signup v1 .* no longer decodes once upgraded to v2: firstName /,
      );
    } finally {
      await d.close();
    }
  });

  it('a row without upgrade decodes as is, keeping its stored version', async () => {
    // v2 only added an optional field: old rows still decode, no hook needed.
    const d = await deployed(
      event({
        schema: SignupV1.extend({ referrer: z.string().optional() }),
        version: 2,
      }),
    );
    try {
      await d.old.fire('shop.Signup', { email: 'g@x.io', name: 'Barbara Liskov' });
      expect(await drainOutbox(d.current)).toMatchObject({ succeeded: 1 });
      expect(d.seen.map((e) => [e.version, e.payload])).toEqual([
        [1, { email: 'g@x.io', name: 'Barbara Liskov' }],
      ]);
    } finally {
      await d.close();
    }
  });

  it('an older row without upgrade that no longer decodes is an ordinary failed attempt', async () => {
    const d = await deployed(event({ schema: SignupV2, version: 2 }));
    try {
      await d.old.fire('shop.Signup', { email: 'h@x.io', name: 'Ken Thompson' });
      expect(await drainOutbox(d.current, { limit: 1 })).toMatchObject({ failed: 1, dead: 0 });
      const [row] = await rowsOf(d.current, 'mail.welcome');
      expect(row.lastError).toMatch(/^PayloadDecodeError: stored payload of shop\.Signup v1 /);
    } finally {
      await d.close();
    }
  });

  it('a row of a newer version than declared is decoded with the current schema as is (a rolling deploy)', async () => {
    // The roles reversed: a v2 process fired, a v1 relay (with an upgrade hook) decodes.
    const tablePrefix = freshPrefix();
    const seen: OutboxEvent[] = [];
    let upgraded = 0;
    const v1 = event({
      schema: z.object({ email: z.string() }),
      upgrade: (p) => {
        upgraded += 1;
        return p;
      },
    });
    const v2 = event({
      schema: z.object({ email: z.string(), firstName: z.string() }),
      version: 2,
    });
    const newer = await openOutbox(db, signupConfig(v2, []), { tablePrefix });
    const older = await openOutbox(db, signupConfig(v1, seen), { tablePrefix });
    try {
      await newer.fire('shop.Signup', { email: 'i@x.io', firstName: 'Ida' });
      expect(await drainOutbox(older)).toMatchObject({ succeeded: 1 });
      expect(upgraded).toBe(0);
      // The v1 schema strips what it does not know; the version says what was stored.
      expect(seen.map((e) => [e.version, e.payload])).toEqual([[2, { email: 'i@x.io' }]]);
    } finally {
      await newer.close();
      await older.close();
    }
  });

  it('a newer row the current schema refuses is an ordinary, retried PayloadDecodeError', async () => {
    const tablePrefix = freshPrefix();
    const v1 = event({ schema: SignupV1 });
    const v2 = event({ schema: SignupV2, version: 2, upgrade: splitName });
    const newer = await openOutbox(db, signupConfig(v2, []), { tablePrefix });
    const older = await openOutbox(db, signupConfig(v1, []), { tablePrefix });
    try {
      await newer.fire('shop.Signup', { email: 'j@x.io', firstName: 'J', lastName: 'K' });
      expect(await drainOutbox(older, { limit: 1 })).toMatchObject({ failed: 1, dead: 0 });
      const [row] = await rowsOf(older, 'mail.welcome');
      expect(row.lastError).toMatch(/^PayloadDecodeError: stored payload of shop\.Signup v2 /);
      const error = await assertFired(older, 'shop.Signup').catch((e: unknown) => e);
      expect((error as Error).cause).toBeInstanceOf(PayloadDecodeError);
      // Once the new version's relay runs, the retry goes through.
      expect(await drainOutbox(newer)).toMatchObject({ succeeded: 1 });
    } finally {
      await newer.close();
      await older.close();
    }
  });
});
