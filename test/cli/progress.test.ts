/**
 * Issue 9: long work shows a progress bar on a TTY, one line per batch when not a TTY, and
 * `--json` for machines — `outbox prune` and `outbox requeue-dead` (cli/progress.ts).
 */
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prune } from '../../cli/commands/prune.js';
import { requeueDead } from '../../cli/commands/requeue-dead.js';
import { type CliStream, cliIo } from '../../cli/io.js';
import type { CliOutput } from '../../cli/log-format.js';
import { DEFAULT_CONNECT_TIMEOUT_MS } from '../../cli/options.js';
import { progressForm, startProgress } from '../../cli/progress.js';
import { createOutbox, type Outbox, silentLogger } from '../../src/index.js';
import { drainOutbox } from '../../testing/drain.js';
import { describeEachDialect } from '../support/dialects.js';
import config from './fixtures/ping.config.js';
import { type CliDatabase, openCliDatabase, PING_CONFIG, REPO } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

const CHUNKS_CONFIG = `${REPO}/test/cli/fixtures/ping-chunks.config.ts`;

/** A stream that says it is a terminal, and keeps what is written to it. */
function fakeTty(): Writable & { isTTY: true; columns: number; text: () => string } {
  let written = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      written += chunk.toString();
      done();
    },
  }) as Writable & { isTTY: true; columns: number; text: () => string };
  stream.isTTY = true;
  stream.columns = 120;
  stream.text = () => written;
  return stream;
}

/** What a terminal shows last: the escapes dropped, the last line (or redraw) drawn. */
function lastDrawn(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: terminal escapes are the point
  const plain = text.replace(/\u001b(?:\[[0-9;?]*[A-Za-z]|[78])/g, '\r');
  const drawn = plain.split(/[\r\n]/).filter((line) => line.trim() !== '');
  return drawn.at(-1) ?? '';
}

/** A command's io with `stderr` as given: stdout dropped, stopped by nothing. */
const ioWith = (stderr: CliStream) =>
  cliIo({ stderr, stdout: { write: () => true }, signal: new AbortController().signal });

/** A command's output, kept. */
function keptOutput(format: 'pretty' | 'json' = 'pretty') {
  const lines = { result: [] as string[], info: [] as string[], error: [] as string[] };
  const out: CliOutput = {
    format,
    logger: silentLogger,
    result: (m) => void lines.result.push(m),
    info: (m) => void lines.info.push(m),
    warn: (m) => void lines.error.push(m),
    error: (m) => void lines.error.push(m),
  };
  return { out, lines };
}

const FULL = '█'.repeat(40);

describe('cli progress', () => {
  it('the form: JSON lines with --json, a bar on a TTY, lines when not a TTY or for a JSON log', () => {
    const { out } = keptOutput();
    expect(progressForm(out, true, fakeTty())).toBe('json');
    expect(progressForm(out, false, fakeTty())).toBe('bar');
    expect(progressForm(out, false, new Writable())).toBe('lines');
    expect(progressForm(keptOutput('json').out, false, fakeTty())).toBe('lines');
  });

  it('on a TTY the bar fills to its total, and grows its total rather than overflow', async () => {
    const { out, lines } = keptOutput();
    const stream = fakeTty();
    const bar = await startProgress(out, {
      form: 'bar',
      label: 'prune',
      unit: 'events',
      total: 4,
      stream,
    });
    expect(lastDrawn(stream.text())).toBe(`prune [${'░'.repeat(40)}] 0% | 0/4 events`);
    bar.batch(2, 'batch 1', {});
    bar.batch(5, 'batch 2', {});
    bar.stop();
    bar.stop();
    expect(lastDrawn(stream.text())).toBe(`prune [${FULL}] 100% | 5/5 events`);
    // The cursor hidden while it draws, shown again after.
    expect(stream.text()).toContain('\u001b[?25l');
    expect(stream.text().endsWith('\n')).toBe(true);
    expect(lines.info).toEqual([]);
  });

  it('not on a TTY: the lines given, one per batch; with --json, the fields as JSON lines', async () => {
    const { out, lines } = keptOutput();
    const plain = await startProgress(out, {
      form: 'lines',
      label: 'x',
      unit: 'y',
      total: 0,
      stream: { write: () => true },
    });
    plain.batch(1, 'batch 1: 1 events', { batch: 1 });
    plain.batch(2, 'batch 2: 1 events', { batch: 2 });
    plain.stop();
    expect(lines.info).toEqual(['batch 1: 1 events', 'batch 2: 1 events']);

    const stream = fakeTty();
    const json = await startProgress(out, {
      form: 'json',
      label: 'x',
      unit: 'y',
      total: 0,
      stream,
    });
    json.batch(1, 'ignored', { batch: 1, events: 1 });
    json.stop();
    expect(stream.text()).toBe('{"batch":1,"events":1}\n');
  });
});

describeEachDialect('outbox prune and requeue-dead: progress', (dialect) => {
  let db: CliDatabase;
  let outbox: Outbox<typeof config>;

  beforeEach(async () => {
    db = await openCliDatabase(dialect.name);
    outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
    await outbox.migrate();
  });
  afterEach(async () => {
    await outbox.close();
    await db.cleanup();
  });

  /** The flags `outbox … -c <config> --url … [--schema …]` parse to. */
  const flags = (file: string) => ({
    config: file,
    url: db.url,
    schema: db.schemaArgs[1],
    preparedStatements: true,
    connectTimeout: DEFAULT_CONNECT_TIMEOUT_MS,
    logFormat: 'pretty' as const,
  });

  /** Fire pings and spend their whole budget (the fixture fails while OUTBOX_TEST_FAIL is set). */
  async function deadPings(count: number): Promise<void> {
    await outbox.fireMany(
      Array.from({ length: count }, (_, n) => ({ name: 'test.Ping' as const, payload: { n } })),
    );
    process.env.OUTBOX_TEST_FAIL = '1';
    try {
      await drainOutbox(outbox);
    } finally {
      delete process.env.OUTBOX_TEST_FAIL;
    }
  }

  /** `count` events, delivered and due for a prune with --older-than 0s. */
  async function settledPings(count: number): Promise<void> {
    await outbox.fireMany(
      Array.from({ length: count }, (_, n) => ({ name: 'test.Ping' as const, payload: { n } })),
    );
    const t = db.outboxOptions.schema ? `"${db.outboxOptions.schema}".` : '';
    const past = new Date(Date.now() - 1000);
    await db.outboxOptions.sequelize.query(
      `UPDATE ${t}"outbox_deliveries" SET status = 'succeeded', completed_at = $1, succeeded_at = $1`,
      { bind: [dialect.name === 'sqlite' ? past.getTime() : past] },
    );
  }

  it('prune on a TTY draws a bar over the dry run’s count, full when it is done', async () => {
    await settledPings(3);
    const { out, lines } = keptOutput();
    const stream = fakeTty();
    const code = await prune(
      { ...flags(PING_CONFIG), olderThan: 0, batchSize: 2 },
      out,
      ioWith(stream),
    );
    expect(code).toBe(0);
    expect(lastDrawn(stream.text())).toBe(`prune [${FULL}] 100% | 3/3 events`);
    // The bar instead of the lines; the result as ever.
    expect(lines.info).toEqual([]);
    expect(lines.result).toEqual([
      expect.stringMatching(/^pruned 3 events and 3 delivery rows in 3 batches/),
    ]);
  });

  it('requeue-dead on a TTY draws a bar over the dead rows in scope, full when it is done', async () => {
    await deadPings(5);
    const { out, lines } = keptOutput();
    const stream = fakeTty();
    const code = await requeueDead({ ...flags(CHUNKS_CONFIG), limit: 4 }, out, ioWith(stream));
    expect(code).toBe(0);
    expect(lastDrawn(stream.text())).toBe(`requeue-dead [${FULL}] 100% | 4/4 dead letters`);
    expect(lines.result).toEqual([expect.stringMatching(/^requeued 4 dead letters on /)]);
    expect(await outbox.countDeliveries()).toMatchObject({ dead: 1, pending: 4 });
  });

  it('requeue-dead when not a TTY prints one line per chunk; --json one JSON line per chunk', async () => {
    await deadPings(5);
    const cli = (...args: string[]) => runCliInProcess([...args, '-c', CHUNKS_CONFIG, ...db.args]);
    const plain = await cli('requeue-dead', '--limit', '3');
    expect(plain.code).toBe(0);
    expect(plain.stderr.match(/chunk \d+: .*/g)).toEqual([
      'chunk 1: requeued 2 (2 so far)',
      'chunk 2: requeued 1 (3 so far)',
    ]);
    expect(plain.stdout).toContain('requeued 3 dead letters');

    const json = await cli('requeue-dead', '--all', '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ requeued: 2 });
    expect(
      json.stderr
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual([{ chunk: 1, requeued: 2, totalRequeued: 2 }]);
  });
});
