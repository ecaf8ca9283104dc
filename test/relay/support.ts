import type { Sequelize } from 'sequelize';
import { describe, inject } from 'vitest';
import type { CreateOutboxOptions, Outbox, OutboxConfig, OutboxLogger } from '../../src/index.js';
import { createOutbox, type Scheduler, silentLogger } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import { dialectNamed } from '../../src/storage/dialects.js';
import type { DeliveryRow } from '../../src/storage/store.js';
import type { TestDatabase } from '../../testing/databases.js';
import { DIALECTS, type DialectCase, dialectAvailable, sqlOf } from '../support/dialects.js';

/** A fixed moment the tests' clocks start at: far from the real clock on purpose. */
export const T0 = new Date('2031-03-01T12:00:00.000Z');

/** A clock a test moves by hand. */
export interface TestClock {
  readonly now: () => Date;
  advance(ms: number): Date;
  set(at: Date): void;
}

export function testClock(start: Date = T0): TestClock {
  let at = start.getTime();
  return {
    now: () => new Date(at),
    advance(ms) {
      at += ms;
      return new Date(at);
    },
    set(d) {
      at = d.getTime();
    },
  };
}

/** A logger that keeps what it was told, for asserting what the relay logged. */
export interface CapturedLogger extends OutboxLogger {
  readonly entries: { level: string; message: string; fields?: Record<string, unknown> }[];
  messages(level?: string): string[];
}

export function captureLogger(): CapturedLogger {
  const entries: CapturedLogger['entries'] = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => {
    entries.push({ level, message, fields });
  };
  return {
    entries,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    messages: (level) => entries.filter((e) => !level || e.level === level).map((e) => e.message),
  };
}

let prefixes = 0;

/** A table prefix of its own, so each test starts from empty tables in the file's database. */
export function freshPrefix(): string {
  prefixes += 1;
  return `r${prefixes}_`;
}

/**
 * Create an outbox on a test database with deterministic defaults (no wakeup, a silent
 * logger, jitter 0.5, tables of its own unless `tablePrefix` is given), and migrate it.
 */
export async function openOutbox<C extends OutboxConfig>(
  db: TestDatabase,
  config: C,
  options: Partial<CreateOutboxOptions> = {},
): Promise<Outbox<C>> {
  const outbox = createOutbox(config, {
    ...db.outboxOptions,
    wakeup: null,
    logger: silentLogger,
    jitter: () => 0.5,
    tablePrefix: freshPrefix(),
    ...options,
  });
  await outbox.migrate();
  return outbox;
}

/** Every delivery row, in event order. */
export function deliveryRows(outbox: Outbox): Promise<DeliveryRow[]> {
  return runtimeOf(outbox).store.readDeliveries({});
}

/** The delivery rows of one receiver, in event order. */
export async function rowsOf(outbox: Outbox, receiverKey: string): Promise<DeliveryRow[]> {
  return (await deliveryRows(outbox)).filter((r) => r.receiverKey === receiverKey);
}

/** A table name in the test database's schema (PostgreSQL) or file (SQLite). */
export function tableName(db: TestDatabase, name: string): string {
  return db.outboxOptions.schema ? `"${db.outboxOptions.schema}"."${name}"` : `"${name}"`;
}

/**
 * Create a side-effect table a handler writes into: one row per event id, unique, so a
 * second delivery of the same event is a constraint violation rather than a silent copy.
 */
export async function createReceivedTable(
  db: TestDatabase,
  name = 'received',
  sequelize: Sequelize = db.sequelize,
): Promise<string> {
  const table = tableName(db, name);
  await sqlOf(sequelize).run(
    `CREATE TABLE IF NOT EXISTS ${table} (event_id varchar(64) PRIMARY KEY, label varchar(255))`,
    [],
  );
  return table;
}

/** The event ids a handler recorded in a side-effect table, sorted. */
export async function receivedIds(db: TestDatabase, table: string): Promise<string[]> {
  const rows = await sqlOf(db.sequelize).select<{ event_id: string }>(
    `SELECT event_id FROM ${table} ORDER BY event_id`,
    [],
  );
  return rows.map((r) => r.event_id);
}

/** A promise with its resolve handle, for holding a receiver mid-delivery. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** Wait until `check` holds, polling every few milliseconds; fail after `timeoutMs`. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A sleep for `runRelay({ sleep })` that waits at most `capMs` of real time. */
export function shortSleep(capMs = 5, log?: number[]) {
  return (ms: number, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      log?.push(ms);
      if (signal.aborted) return resolve();
      const timer = setTimeout(done, Math.min(ms, capMs));
      function done() {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    });
}

/** Run `work` and return every SQL statement `sequelize` sent meanwhile (its query log). */
export async function capturingStatements(
  sequelize: Sequelize,
  work: () => Promise<unknown>,
): Promise<string[]> {
  const options = (sequelize as unknown as { options: { logging: unknown } }).options;
  const previous = options.logging;
  const statements: string[] = [];
  options.logging = (sql: string) => void statements.push(sql);
  try {
    await work();
  } finally {
    options.logging = previous;
  }
  return statements;
}

/**
 * Declare a suite that only PostgreSQL can run (several real connections, SKIP LOCKED,
 * LISTEN/NOTIFY, a cut connection). Skipped, like every PostgreSQL suite, only when the
 * server is down and skipping is allowed.
 */
export function describePostgres(title: string, body: (dialect: DialectCase) => void): void {
  const postgres = DIALECTS.find((d) => d.name === 'postgres')!;
  describe.skipIf(!inject('pgAvailable'))(`${title} [postgres]`, () => body(postgres));
}

/**
 * Declare a suite for every dialect whose capabilities split the queue (row locks with SKIP
 * LOCKED and many writers: PostgreSQL, MariaDB through either driver): several relays or
 * connections at once on one table. Each is skipped only when its server is down and
 * skipping is allowed.
 */
export function describeSplittingDialects(
  title: string,
  body: (dialect: DialectCase) => void,
): void {
  for (const dialect of DIALECTS) {
    const c = dialectNamed(dialect.name).capabilities;
    if (!c.skipLocked || c.singleWriter) continue;
    describe.skipIf(!dialectAvailable(dialect.name))(`${title} [${dialect.name}]`, () =>
      body(dialect),
    );
  }
}

/**
 * Time a test moves by hand: a clock and a scheduler over it (`createOutbox({ clock,
 * scheduler })`), so the relay's lease renewals, attempt timeouts and waits run on it and
 * a test reaches a lease's lapse without sleeping through it.
 */
export interface FakeTime extends TestClock {
  readonly scheduler: Scheduler;
  /** Move time forward by `ms`, running each timer that comes due, in order. */
  tick(ms: number): Promise<void>;
  /** How many timers are waiting. */
  pending(): number;
}

export function fakeTime(start: Date = T0): FakeTime {
  const clock = testClock(start);
  let seq = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const scheduler: Scheduler = {
    setTimeout(fn, ms) {
      const id = ++seq;
      timers.set(id, { at: clock.now().getTime() + Math.max(0, ms), fn });
      return { cancel: () => void timers.delete(id) };
    },
    sleep(ms, signal) {
      return new Promise<void>((resolve) => {
        if (signal?.aborted) return resolve();
        const handle = scheduler.setTimeout(done, ms);
        function done() {
          handle.cancel();
          signal?.removeEventListener('abort', done);
          resolve();
        }
        signal?.addEventListener('abort', done, { once: true });
      });
    },
  };
  return {
    ...clock,
    scheduler,
    pending: () => timers.size,
    async tick(ms) {
      const target = clock.now().getTime() + ms;
      for (;;) {
        let next: [number, { at: number; fn: () => void }] | undefined;
        for (const entry of timers)
          if (entry[1].at <= target && (!next || entry[1].at < next[1].at)) next = entry;
        if (!next) break;
        timers.delete(next[0]);
        clock.set(new Date(Math.max(clock.now().getTime(), next[1].at)));
        next[1].fn();
        // Let what the timer started reach its next await (real I/O is not faked).
        await new Promise((resolve) => setImmediate(resolve));
      }
      clock.set(new Date(target));
    },
  };
}

/**
 * Move fake time forward in steps of `stepMs` until `check` holds, letting real I/O (the
 * database) run between steps; fail after `maxSteps`.
 */
export async function tickUntil(
  time: FakeTime,
  check: () => boolean | Promise<boolean>,
  what: string,
  stepMs = 50,
  maxSteps = 2_000,
): Promise<void> {
  for (let i = 0; i < maxSteps; i++) {
    if (await check()) return;
    await time.tick(stepMs);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  throw new Error(`fake time ran ${maxSteps} steps without ${what}`);
}
