/** Issue 9: `outbox dead`, `requeue-dead`, `replay` and `cancel`, run as the operator runs them. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createOutbox, type Outbox, silentLogger } from '../../src/index.js';
import { drainOutbox } from '../../testing/drain.js';
import { describeEachDialect } from '../support/dialects.js';
import config from './fixtures/ping.config.js';
import { type CliDatabase, openCliDatabase, PING_CONFIG } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

describe('outbox dead, requeue-dead, replay, cancel: help', () => {
  it.each(['dead', 'requeue-dead', 'replay', 'cancel'])(
    '%s --help documents --json and the exit codes',
    async (command) => {
      const { stdout, code } = await runCliInProcess([command, '--help']);
      expect(code).toBe(0);
      expect(stdout).toContain('--json');
      expect(stdout).toMatch(/Exit codes:\n {2}0 .*\n {2}1 [\s\S]*\n {2}2 /);
    },
  );
});

describeEachDialect('outbox dead, requeue-dead, replay, cancel', (dialect) => {
  let db: CliDatabase;
  let dir: string;
  let outbox: Outbox<typeof config>;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outbox-cli-ops-'));
    process.env.OUTBOX_TEST_RECEIVED = join(dir, 'received.txt');
  });
  afterAll(() => {
    delete process.env.OUTBOX_TEST_RECEIVED;
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    db = await openCliDatabase(dialect.name);
    outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
    await outbox.migrate();
  });
  afterEach(async () => {
    await outbox.close();
    await db.cleanup();
  });

  const cli = (...args: string[]) => runCliInProcess([...args, '-c', PING_CONFIG, ...db.args]);

  /** Fire pings and spend their whole budget (the fixture fails while OUTBOX_TEST_FAIL is set). */
  async function deadPings(...ns: number[]) {
    const fired = await outbox.fireMany(
      ns.map((n) => ({ name: 'test.Ping' as const, payload: { n } })),
    );
    process.env.OUTBOX_TEST_FAIL = '1';
    try {
      await drainOutbox(outbox);
    } finally {
      delete process.env.OUTBOX_TEST_FAIL;
    }
    return fired;
  }

  it('dead lists the dead letters newest first with their errors, or says there are none: exit 0 either way; --fail-if-any exits 2 when it lists any', async () => {
    const none = await cli('dead');
    expect([none.code, none.stdout]).toEqual([0, expect.stringContaining('no dead letters')]);

    // One after the other, so the second is the newer dead letter.
    const fired = [...(await deadPings(0)), ...(await deadPings(1))];
    expect((await cli('dead', '--fail-if-any')).code).toBe(2);
    const listed = await cli('dead');
    // Listing is not probing: a `set -e` script reads the list (issue 33).
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('2 dead letters');
    expect(listed.stdout).toContain(`test.Ping ${fired[1].id}  attempts 5/5`);
    expect(listed.stdout).toContain('ping 1 refused');
    expect(listed.stdout.indexOf(fired[1].id)).toBeLessThan(listed.stdout.indexOf(fired[0].id));

    const json = await cli('dead', '--json', '--limit', '1', '--receiver', 'test.record');
    expect(json.code).toBe(0);
    const letters = JSON.parse(json.stdout);
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({
      eventId: fired[1].id,
      eventName: 'test.Ping',
      receiverKey: 'test.record',
      lastError: 'Error: ping 1 refused',
    });
  });

  it('requeue-dead --id gives the named rows their attempts back; a row not requeued exits 2', async () => {
    await deadPings(0, 1);
    const [first] = await outbox.deadLetters({ limit: 1 });
    const result = await cli('requeue-dead', '--id', first.deliveryId, '--json');
    expect([result.code, JSON.parse(result.stdout)]).toEqual([0, { requeued: 1 }]);
    expect(await outbox.countDeliveries()).toMatchObject({ pending: 1, dead: 1 });

    const again = await cli('requeue-dead', '--id', first.deliveryId);
    expect([again.code, again.stdout]).toEqual([2, expect.stringContaining('requeued 0')]);
    const rest = await cli('requeue-dead', '--receiver', 'test.record');
    expect([rest.code, rest.stdout]).toEqual([
      0,
      expect.stringContaining('requeued 1 dead letter'),
    ]);
    const bad = await cli('requeue-dead', '--id', 'x');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("option '--id <delivery-id>' argument 'x' is invalid");
  });

  it('replay reopens the events named; an id naming no event exits 2, one that is no id exits 1', async () => {
    const fired = await outbox.fire('test.Ping', { n: 1 });
    await drainOutbox(outbox);
    const result = await cli('replay', fired.id, '--json');
    expect([result.code, JSON.parse(result.stdout)]).toEqual([
      0,
      { reopened: 1, added: 0, missing: [] },
    ]);
    expect(await outbox.countDeliveries()).toMatchObject({ pending: 1, succeeded: 0 });

    const unknown = '01900000-0000-7000-8000-000000000000';
    const missing = await cli('replay', unknown, '--receiver', 'test.record');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`no such event (never fired, or pruned): ${unknown}`);
    const bad = await cli('replay', 'order-7');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("eventIds[0] must be an event's id");
  });

  it('cancel withdraws the owed rows of the events named (exit 0)', async () => {
    const fired = await outbox.fire('test.Ping', { n: 1 });
    const result = await cli('cancel', fired.id);
    expect([result.code, result.stdout]).toEqual([0, expect.stringContaining('cancelled 1')]);
    expect(await outbox.countDeliveries()).toMatchObject({ cancelled: 1, pending: 0 });
    const json = await cli('cancel', fired.id, '--json');
    expect(JSON.parse(json.stdout)).toEqual({ cancelled: 0, inFlight: 0, missing: [] });
  });

  it.each([
    ['dead'],
    ['requeue-dead'],
    ['cancel', '01900000-0000-7000-8000-000000000000'],
    ['replay', '01900000-0000-7000-8000-000000000000'],
  ])(
    '%s refuses a --receiver the config does not declare, naming the close one (exit 1)',
    async (...command) => {
      await deadPings(0);
      const refused = await cli(...command, '--receiver', 'test.recrod');
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain(
        '--receiver "test.recrod" is not a durable receiver of this outbox — did you mean "test.record"?; the durable receivers are: test.record',
      );
      // Nothing was touched.
      expect(await outbox.countDeliveries()).toMatchObject({ dead: 1 });
    },
  );

  it('a bare requeue-dead is refused off a terminal, unless --all (exit 1)', async () => {
    await deadPings(0, 1);
    const refused = await cli('requeue-dead');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('pass --all to mean it');
    expect(await outbox.countDeliveries()).toMatchObject({ dead: 2, pending: 0 });
    const all = await cli('requeue-dead', '--all', '--json');
    expect([all.code, JSON.parse(all.stdout)]).toEqual([0, { requeued: 2 }]);
  });

  it('a bare requeue-dead on a terminal asks first, with the count; only a yes requeues', async () => {
    await deadPings(0, 1);
    const questions: string[] = [];
    const terminal = (answer: boolean) => ({
      stdin: { isTTY: true },
      confirm: async (question: string) => {
        questions.push(question);
        return answer;
      },
    });
    const args = ['requeue-dead', '-c', PING_CONFIG, ...db.args];
    const declined = await runCliInProcess(args, { terminal: terminal(false) });
    expect(declined.code).toBe(1);
    expect(declined.stderr).toContain('nothing requeued (not confirmed)');
    expect(await outbox.countDeliveries()).toMatchObject({ dead: 2, pending: 0 });
    const accepted = await runCliInProcess(args, { terminal: terminal(true) });
    expect([accepted.code, accepted.stdout]).toEqual([0, expect.stringContaining('requeued 2')]);
    expect(questions).toEqual([
      expect.stringMatching(/^requeue all 2 dead letters on .*\? \[y\/N\]$/),
      expect.stringMatching(/^requeue all 2 dead letters on /),
    ]);
  });
});
