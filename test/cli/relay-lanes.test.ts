import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { createOutbox, type Outbox, silentLogger } from '../../src/index.js';
import { describeEachDialect } from '../support/dialects.js';
import config from './fixtures/lanes.config.js';
import { type CliDatabase, openCliDatabase } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

const LANES_CONFIG = join(import.meta.dirname, 'fixtures/lanes.config.ts');

/** What the fixture's receivers wrote, sorted. */
function received(file: string): string[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .sort();
}

describeEachDialect('outbox relay --lane / --topic', (dialect) => {
  let db: CliDatabase;
  let dir: string;
  let file: string;
  let outbox: Outbox<typeof config>;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outbox-cli-lanes-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  beforeEach(async (ctx) => {
    db = await openCliDatabase(dialect.name);
    file = join(dir, `${ctx.task.id}.txt`);
    outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
    await outbox.migrate();
    await outbox.fire('test.Ping', { n: 1 });
    await outbox.fire('test.Pong', { n: 1 });
  });
  afterEach(async () => {
    await outbox.close();
    await db.cleanup();
  });

  const relay = (...flags: string[]) =>
    runCliInProcess(['relay', '--once', '-c', LANES_CONFIG, ...flags, ...db.args], {
      env: { OUTBOX_TEST_RECEIVED: file },
    });

  it('--once serves the default lane unless told otherwise', async () => {
    const result = await relay();
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('(lane default)');
    expect(received(file)).toEqual(['pong:1', 'record:1']);
    const mail = await relay('--lane', 'mail');
    expect(mail.code).toBe(0);
    expect(received(file)).toEqual(['mail:1', 'pong:1', 'record:1']);
  });

  it('--all-lanes serves every lane, and --exclude-lane leaves one out', async () => {
    expect((await relay('--all-lanes', '--exclude-lane', 'default')).code).toBe(0);
    expect(received(file)).toEqual(['mail:1']);
    expect((await relay('--all-lanes')).code).toBe(0);
    expect(received(file)).toEqual(['mail:1', 'pong:1', 'record:1']);
  });

  it('a lane no receiver declares is refused at start, exit 1', async () => {
    const result = await relay('--lane', 'mial');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'no receiver is declared in lane "mial" (declared lanes: default, mail)',
    );
    // Refused before anything is printed: no "relay running" line first.
    expect(result.stderr).not.toContain('running');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(received(file)).toEqual([]);
  });

  it('--topic and --exclude-topic split the table by topic', async () => {
    expect((await relay('--all-lanes', '--topic', 'test.Po*')).code).toBe(0);
    expect(received(file)).toEqual(['pong:1']);
    expect((await relay('--all-lanes', '--exclude-topic', 'test.Pong')).code).toBe(0);
    expect(received(file)).toEqual(['mail:1', 'pong:1', 'record:1']);
  });

  it('--help documents the lane and topic flags', async () => {
    const result = await runCliInProcess(['relay', '--help']);
    for (const flag of [
      '--lane <lane>',
      '--all-lanes',
      '--exclude-lane <lane>',
      '--topic <topic>',
      '--exclude-topic <topic>',
    ])
      expect(result.stdout).toContain(flag);
  });
});
