import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  attributed,
  defineOutbox,
  event,
  type FiredEvent,
  receiver,
  suppressed,
  ValidationError,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { deliveryRows, freshPrefix, openOutbox, tableName } from '../relay/support.js';
import { describeEachDialect, sqlOf } from '../support/dialects.js';
import { recordingWakeup } from './support.js';

const UserCreated = event({ schema: z.object({ userId: z.string() }) });
const WelcomeSent = event({ schema: z.object({ userId: z.string() }) });

/** Users are imported in bulk; every reaction to a new user records what it saw. */
function accounts(ran: string[]) {
  return defineOutbox({
    events: { 'accounts.UserCreated': UserCreated, 'accounts.WelcomeSent': WelcomeSent },
    receivers: {
      'mail.welcome': receiver(UserCreated, {
        handle: (e) => void ran.push(`durable:${e.payload.userId}`),
      }),
      'search.index': receiver(UserCreated, {
        mode: 'inline',
        handle: (e) => void ran.push(`inline:${e.payload.userId}`),
      }),
      'metrics.count': receiver(UserCreated, {
        mode: 'onCommit',
        handle: (e) => void ran.push(`onCommit:${e.payload.userId}`),
      }),
      'audit.welcome': receiver(WelcomeSent, { handle: () => {} }),
    },
  });
}

interface EventRow {
  id: string;
  name: string;
  suppressed_reason: string | null;
  actor: string | null;
}

describeEachDialect('suppressed(): fire without delivering, and say why', (dialect) => {
  let db: TestDatabase;
  let prefix: string;
  const ran: string[] = [];
  const wakeup = recordingWakeup();
  let outbox: Awaited<ReturnType<typeof openAccounts>>;

  function openAccounts() {
    prefix = freshPrefix();
    return openOutbox(db, accounts(ran), { tablePrefix: prefix, wakeup });
  }

  beforeAll(async () => {
    db = await dialect.open();
    outbox = await openAccounts();
  });
  afterEach(async () => {
    await drainOutbox(outbox);
    ran.length = 0;
    wakeup.signals.length = 0;
  });
  afterAll(async () => {
    await outbox.close();
    await db.cleanup();
  });

  async function eventRows(): Promise<EventRow[]> {
    const found = await sqlOf(db.sequelize).select(
      `SELECT id, name, suppressed_reason, actor FROM ${tableName(db, `${prefix}events`)} ORDER BY id`,
      [],
    );
    return found.map((r) => ({
      id: String(r.id),
      name: r.name as string,
      suppressed_reason: (r.suppressed_reason as string | null) ?? null,
      actor: (r.actor as string | null) ?? null,
    }));
  }

  async function rowOf(fired: FiredEvent): Promise<EventRow | undefined> {
    return (await eventRows()).find((r) => r.id === fired.sequence);
  }

  /** Let after-commit work that was (not) arranged have its turn. */
  const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

  it('suppression writes the event marked with its reason and no deliveries', async () => {
    const fired = await suppressed('accounts.UserCreated', { reason: 'bulk import #7' }, () =>
      outbox.fire('accounts.UserCreated', { userId: 'u1' }),
    );
    expect(fired).toMatchObject({ suppressed: 'bulk import #7', recorded: true, duplicate: false });
    expect(fired.sequence).not.toBe('');
    expect(await rowOf(fired)).toMatchObject({ suppressed_reason: 'bulk import #7' });
    expect((await deliveryRows(outbox)).filter((d) => d.eventSequence === fired.sequence)).toEqual(
      [],
    );
    expect(await drainOutbox(outbox)).toMatchObject({ succeeded: 0 });
    expect(ran).toEqual([]);
  });

  it('a suppressed event runs no inline or onCommit receiver and signals no wakeup', async () => {
    await db.sequelize.transaction((transaction) =>
      suppressed(['accounts.UserCreated'], { reason: 'migration' }, () =>
        outbox.fire('accounts.UserCreated', { userId: 'u2' }, { transaction }),
      ),
    );
    await settle();
    expect(ran).toEqual([]);
    expect(wakeup.signals).toEqual([]);

    // The same fire outside the block runs all three and signals.
    await outbox.fire('accounts.UserCreated', { userId: 'u3' });
    await vi.waitFor(() => expect(ran).toContain('onCommit:u3'));
    expect(ran).toContain('inline:u3');
    expect(wakeup.signals).toEqual([['accounts.UserCreated']]);
  });

  it('record: false writes nothing', async () => {
    const before = await eventRows();
    const fired = await suppressed(
      'accounts.UserCreated',
      { reason: 'replaying a dump', record: false },
      () => outbox.fire('accounts.UserCreated', { userId: 'u4' }),
    );
    expect(fired).toMatchObject({
      id: '',
      sequence: '',
      suppressed: 'replaying a dump',
      recorded: false,
      payload: { userId: 'u4' },
    });
    await settle();
    expect(await eventRows()).toEqual(before);
    expect(ran).toEqual([]);
    expect(wakeup.signals).toEqual([]);
  });

  it('a suppressed payload is still validated: a suppressed bug is still a bug', async () => {
    await expect(
      suppressed('accounts.UserCreated', { reason: 'r', record: false }, () =>
        outbox.fire('accounts.UserCreated', { userId: 5 } as never),
      ),
    ).rejects.toBeInstanceOf(ValidationError);
  });

  it('events a block does not name are fired as usual, in the order given', async () => {
    const fired = await suppressed('accounts.WelcomeSent', { reason: 'no mail today' }, () =>
      outbox.fireMany([
        { name: 'accounts.WelcomeSent', payload: { userId: 'u5' } },
        { name: 'accounts.UserCreated', payload: { userId: 'u5' } },
      ]),
    );
    expect(fired.map((f) => [f.name, f.suppressed])).toEqual([
      ['accounts.WelcomeSent', 'no mail today'],
      ['accounts.UserCreated', null],
    ]);
    const owed = (await deliveryRows(outbox)).filter((d) =>
      fired.some((f) => f.sequence === d.eventSequence),
    );
    expect(owed.map((d) => d.receiverKey)).toEqual(['mail.welcome']);
    await vi.waitFor(() => expect(ran).toEqual(['inline:u5', 'onCommit:u5']));
    expect(wakeup.signals).toEqual([['accounts.UserCreated']]);
  });

  it('nested blocks accumulate, and the innermost matching reason is recorded', async () => {
    const [created, welcomed, createdInner] = await suppressed(
      'accounts.UserCreated',
      { reason: 'outer: import' },
      () =>
        suppressed('accounts.WelcomeSent', { reason: 'inner: library' }, async () => [
          await outbox.fire('accounts.UserCreated', { userId: 'u6' }),
          await outbox.fire('accounts.WelcomeSent', { userId: 'u6' }),
          await suppressed('accounts.UserCreated', { reason: 'innermost' }, () =>
            outbox.fire('accounts.UserCreated', { userId: 'u7' }),
          ),
        ]),
    );
    // The inner block did not re-enable the outer one's event.
    expect((await rowOf(created))?.suppressed_reason).toBe('outer: import');
    expect((await rowOf(welcomed))?.suppressed_reason).toBe('inner: library');
    expect((await rowOf(createdInner))?.suppressed_reason).toBe('innermost');
    expect(
      (await deliveryRows(outbox)).filter((d) =>
        [created, welcomed, createdInner].some((f) => f.sequence === d.eventSequence),
      ),
    ).toEqual([]);
  });

  it('any matching block asking not to record wins', async () => {
    const outerDiscards = await suppressed(
      'accounts.UserCreated',
      { reason: 'outer', record: false },
      () =>
        suppressed('accounts.UserCreated', { reason: 'inner', record: true }, () =>
          outbox.fire('accounts.UserCreated', { userId: 'u8' }),
        ),
    );
    expect(outerDiscards).toMatchObject({ recorded: false, suppressed: 'inner', sequence: '' });
    const innerDiscards = await suppressed('accounts.UserCreated', { reason: 'outer' }, () =>
      suppressed('accounts.UserCreated', { reason: 'inner', record: false }, () =>
        outbox.fire('accounts.UserCreated', { userId: 'u9' }),
      ),
    );
    expect(innerDiscards).toMatchObject({ recorded: false, suppressed: 'inner' });
    // A non-matching block asking not to record changes nothing.
    const recorded = await suppressed('accounts.UserCreated', { reason: 'kept' }, () =>
      suppressed('accounts.WelcomeSent', { reason: 'other', record: false }, () =>
        outbox.fire('accounts.UserCreated', { userId: 'u10' }),
      ),
    );
    expect(recorded).toMatchObject({ recorded: true, suppressed: 'kept' });
  });

  it('a suppressed event keeps its attribution', async () => {
    const fired = await attributed({ actor: 'importer' }, () =>
      suppressed('accounts.UserCreated', { reason: 'import' }, () =>
        outbox.fire('accounts.UserCreated', { userId: 'u11' }),
      ),
    );
    expect(await rowOf(fired)).toMatchObject({ actor: 'importer', suppressed_reason: 'import' });
  });

  it('a suppressed() naming an event that is not declared is refused, with a did-you-mean', async () => {
    const before = await eventRows();
    const error = await suppressed('accounts.UserCreatd', { reason: 'typo' }, () =>
      outbox.fire('accounts.UserCreated', { userId: 'u12' }),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatchInlineSnapshot(
      `"fire(): suppressed() names "accounts.UserCreatd", which is not a declared event — did you mean "accounts.UserCreated"?; nothing was written"`,
    );
    expect(await eventRows()).toEqual(before);
  });

  it('a suppressed() without a reason, or without names, is refused where it is called', () => {
    const run = vi.fn();
    expect(() =>
      suppressed('accounts.UserCreated', {} as { reason: string }, run),
    ).toThrowErrorMatchingInlineSnapshot(
      `[ValidationError: suppressed("accounts.UserCreated"): a reason is required; it is written on every event suppressed, so the silence can be audited]`,
    );
    expect(() => suppressed([], { reason: 'r' }, run)).toThrow(/name at least one event/);
    expect(() => suppressed([''], { reason: 'r' }, run)).toThrow(ValidationError);
    expect(() =>
      suppressed('accounts.UserCreated', { reason: 'r', record: 'no' as never }, run),
    ).toThrow(/record must be true or false/);
    expect(run).not.toHaveBeenCalled();
  });
});
