/** Issue 32: `outbox console`, run in-process through `main(argv, io)`. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createOutbox, type Outbox, silentLogger } from '../../src/index.js';
import config from '../cli/fixtures/ping.config.js';
import { type CliDatabase, openCliDatabase, PING_CONFIG } from '../cli/support/cli.js';
import {
  type InProcessCli,
  runCliInProcess,
  startCliInProcess,
} from '../cli/support/in-process.js';
import { waitFor } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import { Client, csrfIn, TOKEN } from './support.js';

describe('outbox console: help and refusals', () => {
  it('documents --port, --host, --read-only and --token', async () => {
    const { stdout, code } = await runCliInProcess(['console', '--help']);
    expect(code).toBe(0);
    for (const flag of ['--port <port>', '--host <host>', '--read-only', '--token [token]'])
      expect(stdout).toContain(flag);
    expect(stdout).toContain('refuses any other host without a token');
  });

  it('refuses a host other than loopback without a token, before it connects', async () => {
    const { code, stderr } = await runCliInProcess([
      'console',
      '--host',
      '0.0.0.0',
      '-c',
      PING_CONFIG,
      '--url',
      'sqlite:/nonexistent/db.sqlite',
    ]);
    expect(code).toBe(1);
    expect(stderr).toContain(
      '--host 0.0.0.0 serves the console beyond this machine: give it a token',
    );
  });
});

describeEachDialect('outbox console', (dialect) => {
  let db: CliDatabase;
  let outbox: Outbox<typeof config>;
  let running: InProcessCli | undefined;
  beforeEach(async () => {
    db = await openCliDatabase(dialect.name);
    outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
    await outbox.migrate();
  });
  afterEach(async () => {
    running?.stop();
    await running?.done;
    running = undefined;
    await outbox.close();
    await db.cleanup();
  });

  /** Start `outbox console` on a free port; resolves to its URL once it listens. */
  async function start(args: string[], env: Record<string, string> = {}): Promise<string> {
    running = startCliInProcess(
      ['console', '--port', '0', ...args, '-c', PING_CONFIG, ...db.args],
      { env },
    );
    let url: string | undefined;
    await waitFor(async () => {
      const out = running!.output();
      url = /console on (http:\/\/\S+\/) for/.exec(out.stdout)?.[1];
      if (!url && out.stderr.includes('outbox')) throw new Error(out.stderr);
      return url !== undefined;
    }, 'the console to listen');
    return url!.replace(/\/$/, '');
  }

  it('serves on 127.0.0.1, a random token with --token alone, and stops on a stop request (exit 0)', async () => {
    const url = await start(['--token']);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const token = /token: (\S+)/.exec(running!.output().stdout)?.[1];
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await new Client(url).get('/')).status).toBe(303);
    const page = await new Client(url, { authorization: `Bearer ${token}` }).get('/');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Health');
    running!.stop('SIGTERM');
    expect((await running!.done).code).toBe(0);
    running = undefined;
  });

  it('takes the token from OUTBOX_CONSOLE_TOKEN, and --read-only serves no action to its holder', async () => {
    await outbox.fire('test.Ping', { n: 1 });
    const url = await start(['--read-only'], { OUTBOX_CONSOLE_TOKEN: TOKEN });
    expect(running!.output().stdout).toContain('(read-only)');
    const client = new Client(url);
    expect((await client.signIn(TOKEN)).status).toBe(303);
    const page = await client.get('/events');
    if (!page.text.includes('test.Ping'))
      console.log('PROBE', page.status, page.text.replace(/\s+/g, ' ').slice(0, 3000));
    expect(page.text).toContain('test.Ping');
    expect(page.text).toContain('started read-only');
    expect(page.text).not.toContain('/actions/');
    const refused = await client.post('/actions/replay', {
      event: '01890000-0000-7000-8000-000000000000',
      confirm: 'yes',
      csrf: csrfIn(page.text),
    });
    expect(refused.status).toBe(403);
  });

  it('without a token, on loopback: the pages, read-only', async () => {
    const url = await start([]);
    expect(running!.output().stdout).toContain('read-only: no token');
    const page = await new Client(url).get('/catalogue');
    expect(page.status).toBe(200);
    expect(page.text).toContain('test.Ping');
  });
});
