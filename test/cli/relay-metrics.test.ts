import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { createOutbox, type Outbox, silentLogger } from '../../src/index.js';
import { describeEachDialect } from '../support/dialects.js';
import config from './fixtures/ping.config.js';
import {
  type CliDatabase,
  openCliDatabase,
  PING_CONFIG,
  receivedNumbers,
  waitFor,
} from './support/cli.js';
import { runCliInProcess, startCliInProcess } from './support/in-process.js';

describeEachDialect('outbox relay --metrics-port', (dialect) => {
  let db: CliDatabase;
  let dir: string;
  let received: string;
  let outbox: Outbox<typeof config>;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outbox-metrics-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  beforeEach(async (ctx) => {
    db = await openCliDatabase(dialect.name);
    received = join(dir, `${ctx.task.id}.txt`);
    outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
    await outbox.migrate();
  });
  afterEach(async () => {
    await outbox.close();
    await db.cleanup();
  });

  it('serves /metrics on 127.0.0.1 while the relay runs, counting real deliveries, and closes it on shutdown', async () => {
    await outbox.fireMany(
      Array.from({ length: 4 }, (_, n) => ({ name: 'test.Ping' as const, payload: { n } })),
    );
    const relay = startCliInProcess(
      ['relay', '-c', PING_CONFIG, '--metrics-port', '0', ...db.args],
      {
        env: { OUTBOX_TEST_RECEIVED: received },
      },
    );
    let url = '';
    await waitFor(() => {
      url =
        /metrics at (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(relay.output().stderr)?.[1] ?? '';
      return url !== '';
    }, 'the relay to log its metrics endpoint');
    await waitFor(() => receivedNumbers(received).length === 4, 'four deliveries');

    // the counter follows the relay's reports, which come right after the commits
    let text = '';
    await waitFor(async () => {
      text = await (await fetch(url)).text();
      return text.includes('outbox_deliveries_total{receiver="test.record",outcome="succeeded"} 4');
    }, 'the counter to reach 4');
    // The gauges are read from health() behind a 5 s cache: a scrape while the relay was
    // still delivering may be what they show for a while yet.
    await waitFor(
      async () => {
        text = await (await fetch(url)).text();
        return /^outbox_owed 0$/m.test(text);
      },
      'the owed gauge to read 0',
      15_000,
    );
    expect(text).toMatch(/^outbox_owed 0$/m);
    expect(text).toMatch(/^outbox_dead 0$/m);
    expect(text).toMatch(/^outbox_delivery_duration_seconds_count\{receiver="test.record"\} 4$/m);
    expect(text).toMatch(/^outbox_claim_duration_seconds_count [1-9]\d*$/m);

    relay.stop('SIGTERM');
    const result = await relay.done;
    expect(result.code).toBe(0);
    await expect(fetch(url)).rejects.toThrow();
  });

  it('refuses a port that is taken (exit 1), naming it', async () => {
    const { createServer } = await import('node:http');
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as { port: number }).port;
    try {
      const result = await runCliInProcess(
        ['relay', '-c', PING_CONFIG, '--once', '--metrics-port', String(port), ...db.args],
        {
          env: { OUTBOX_TEST_RECEIVED: received },
        },
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`--metrics-port ${port}: cannot listen on 127.0.0.1:${port}`);
    } finally {
      busy.close();
    }
  });
});
