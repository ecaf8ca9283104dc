/**
 * Issue 33: with `--log-format json` the CLI's own lines and the relay's are one format
 * (`{"time","level","msg",…fields}`), the relay's per-delivery lines carry the delivery's
 * identity as fields, and `--summary-interval` sets how often the relay's summary line is
 * written (a fraction of a second here: no real seconds slept).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { createOutbox, type Outbox, silentLogger } from '../../src/index.js';
import { describeEachDialect } from '../support/dialects.js';
import config from './fixtures/ping.config.js';
import { type CliDatabase, openCliDatabase, PING_CONFIG } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

describeEachDialect('outbox relay --log-format json', (dialect) => {
  let db: CliDatabase;
  let dir: string;
  let outbox: Outbox<typeof config>;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outbox-cli-log-lines-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  beforeEach(async () => {
    db = await openCliDatabase(dialect.name);
    outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
    await outbox.migrate();
  });
  afterEach(async () => {
    await outbox.close();
    await db.cleanup();
  });

  it("writes the CLI's lines and the relay's in one JSON shape, the delivery's identity as fields, and a summary line", async () => {
    const fired = await outbox.fire('test.Ping', { n: 1 });
    const result = await runCliInProcess(
      [
        'relay',
        '--once',
        '--log-format',
        'json',
        '--summary-interval',
        '40ms',
        '-c',
        PING_CONFIG,
        ...db.args,
      ],
      {
        env: {
          OUTBOX_TEST_RECEIVED: join(dir, 'received.txt'),
          OUTBOX_TEST_FAIL: '1',
          OUTBOX_TEST_DELAY_MS: '150',
        },
      },
    );
    expect(result.code).toBe(2);
    const lines = result.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const line of lines) {
      expect(Object.keys(line).slice(0, 3)).toEqual(['time', 'level', 'msg']);
      expect(Number.isNaN(Date.parse(String(line.time)))).toBe(false);
    }
    const byMsg = (start: string) => lines.find((l) => String(l.msg).startsWith(start));
    // The CLI's own line…
    expect(byMsg('relay running')).toMatchObject({ level: 'info', workerId: expect.any(String) });
    // …the relay's failure line, its delivery's identity beside the message…
    expect(await outbox.countDeliveries()).toMatchObject({ failed: 1 });
    expect(byMsg('delivery ')).toMatchObject({
      level: 'warn',
      receiver: 'test.record',
      deliveryId: expect.any(String),
      eventId: fired.id,
      eventName: 'test.Ping',
      attempt: 1,
    });
    // …and the summary, on the interval given.
    const summary = lines.find((l) => /: delivered \d+, failed/.test(String(l.msg)));
    expect(summary).toMatchObject({ level: 'info', intervalMs: 40, delivered: 0 });
  });

  it('refuses a --summary-interval without its unit (exit 1)', async () => {
    const result = await runCliInProcess([
      'relay',
      '--once',
      '--summary-interval',
      '60',
      '-c',
      PING_CONFIG,
      ...db.args,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('expected a duration with its unit');
  });
});
