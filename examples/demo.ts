/**
 * `npx outbox demo`: the shop of `examples/shop`, on a fresh SQLite file, from nothing.
 *
 * It migrates, places a burst of orders (each committing with its event, one rolling back),
 * runs a relay until nothing is owed, and explains what happened: what was delivered,
 * what was retried, what was dead-lettered and why, and that the rolled-back order
 * delivered nothing. It takes a few seconds and needs no server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueryTypes, Sequelize } from 'sequelize';
import { silentLogger } from '../src/index.js';
import { createShop, type Shop } from './shop/app.js';
import type { OrderLine } from './shop/models.js';
import { type Mail, Mailer } from './shop/services.js';

/** How many orders the demo places. */
const ORDERS = 200;
/** Every 10th order is cancelled by its customer (order-0010 twice: a double click). */
const CANCEL_EVERY = 10;
/** Every 7th customer's mail provider refuses the first send (`SMTP 421`). */
const SLOW_MAIL_EVERY = 7;
/** This order buys a grand piano, over the card's limit: its payment is declined for good. */
const DECLINED_ORDER = 42;
/** This order wants 5 signed prints of the 3 on the shelf: it rolls back. */
const ROLLED_BACK_ORDER = 77;
/** The demo gives up (and fails) if the backlog is not empty after this long. */
const DEADLINE_MS = 60_000;

/** A dead-lettered delivery, read back from the outbox's tables. */
export interface DeadLetter {
  readonly receiverKey: string;
  readonly eventName: string;
  readonly orderId: string;
  readonly attempts: number;
  readonly error: string;
}

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /** Keep the SQLite file (and print where it is) instead of deleting it. */
  readonly keep?: boolean;
  /** Where to create the database. @defaultValue a new folder in the OS temp dir */
  readonly dir?: string;
  /** Where the story and the summary go. @defaultValue `process.stdout` */
  readonly stdout?: NodeJS.WritableStream;
  /** Where the live progress line goes (redrawn in place only on a TTY). @defaultValue `process.stderr` */
  readonly stderr?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Receives the summary as data (the tests read it). */
  readonly onSummary?: (summary: DemoSummary) => void;
}

/** What the demo observed, as numbers. */
export interface DemoSummary {
  readonly databaseFile: string;
  readonly ordersPlaced: number;
  readonly ordersCancelled: number;
  /** Cancels repeated with the same idempotency key, which recorded nothing. */
  readonly duplicateCancels: number;
  /** Successful deliveries, by receiver key. */
  readonly delivered: Readonly<Record<string, number>>;
  readonly deliveredTotal: number;
  /** Whether analytics, which receives every event, saw each order's events in firing order. */
  readonly inOrderPerKey: boolean;
  /** Deliveries that failed at least once and then succeeded. */
  readonly retried: number;
  /** Deliveries that failed at least once, by receiver key, with the first error seen. */
  readonly retriedBy: Readonly<Record<string, { deliveries: number; firstError: string }>>;
  /** Dead letters, as the outbox stores them. */
  readonly dead: readonly DeadLetter[];
  /** Deliveries due and still owed when the relay stopped (0 unless the deadline hit). */
  readonly owed: number;
  /**
   * Deliveries whose due time is still ahead: each order's `shop.expireUnpaidOrder`, due 48
   * hours after it was placed. Work that is on time, not a backlog.
   */
  readonly scheduled: number;
  readonly rolledBack: {
    readonly orderId: string;
    readonly reason: string;
    /** Rows about the order in the outbox, the shop's tables, the mail and analytics sinks. */
    readonly eventsRecorded: number;
    readonly orderRows: number;
    readonly payments: number;
    readonly mails: number;
    readonly analyticsEvents: number;
    readonly logLines: number;
  };
  /** Log lines the onCommit receiver `shop.logOrderPlaced` wrote. */
  readonly onCommitLogLines: number;
  readonly fireMs: number;
  readonly relayMs: number;
  readonly totalMs: number;
  /** Whether everything came out as the outbox promises. */
  readonly ok: boolean;
}

/** Run the demo; resolves to the process exit code (0 when every check held). */
export async function runDemo(options: DemoOptions = {}): Promise<number> {
  const out = options.stdout ?? process.stdout;
  const err = options.stderr ?? process.stderr;
  const say = (line = '') => out.write(`${line}\n`);
  const started = performance.now();

  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'outbox-demo-'));
  const databaseFile = join(dir, 'shop.sqlite');
  const sequelize = new Sequelize({ dialect: 'sqlite', storage: databaseFile, logging: false });
  const logLines: string[] = [];
  const shop = createShop(sequelize, {
    // A demo can't wait out real backoffs: a jitter of 0.01 turns the first retry's
    // "somewhere in the next second" into "within 10 ms". The curve is the real one.
    outbox: { logger: silentLogger, jitter: () => 0.01 },
    mailer: new Mailer((mail: Mail) => mail.to.endsWith('@slow-mail.example')),
    log: (line) => logLines.push(line),
  });
  // The outbox's logger is silenced (the summary reports failed deliveries); anything
  // else going wrong is collected here, printed, and fails the demo.
  const problems: string[] = [];
  shop.outbox.on('relay:error', ({ error, during }) => {
    problems.push(`relay error during ${during}: ${String(error)}`);
  });
  shop.outbox.on('fire:onCommitFailed', ({ receiverKey, error }) => {
    problems.push(`onCommit receiver ${receiverKey} failed: ${String(error)}`);
  });

  try {
    say('outboxkit demo: a small shop on an embedded SQLite database, from nothing');
    say(`database: ${databaseFile}`);
    say();

    // 1. Tables: the outbox's (migrate) and the shop's own, and stock on the shelves.
    await shop.setUp({
      mug: 10_000,
      tee: 10_000,
      poster: 10_000,
      'signed-print': 3,
      'grand-piano': 1,
    });
    say('1. migrate   outbox.migrate() created the outbox tables; the shop created its own');

    // 2. The burst: every order commits with its event, or neither exists.
    const fireStarted = performance.now();
    const orders = await placeOrders(shop);
    const fireMs = performance.now() - fireStarted;
    say(
      `2. fire      ${orders.placed} orders placed, each in one transaction with its shop.OrderPlaced event (${seconds(fireMs)})`,
    );
    say(
      `             ${orders.cancelled} cancelled; order-${pad(CANCEL_EVERY)}'s Cancel was clicked twice and announced once (idempotency key)`,
    );
    say(`             ${orders.rolledBack.orderId} rolled back: ${orders.rolledBack.reason}`);

    // 3. The relay, until nothing is owed.
    say('3. relay     outbox.runRelay() delivers what the transactions recorded…');
    const relayStarted = performance.now();
    const relay = await relayUntilDone(shop, err);
    const relayMs = performance.now() - relayStarted;

    const summary = await summarise(shop, {
      databaseFile,
      orders,
      relay,
      logLines,
      fireMs,
      relayMs,
      totalMs: performance.now() - started,
    });
    printSummary(summary, say, problems);
    options.onSummary?.(summary);
    say();
    say(
      options.keep
        ? `Kept the database: sqlite3 ${databaseFile} 'select status, count(*) from outbox_deliveries group by 1'`
        : 'Deleted the database (run `npx outbox demo --keep` to keep it and look inside).',
    );
    say(
      "The code: README.md (shipped with the package) walks through it; the shop's source is examples/shop/ in the outboxkit repository.",
    );
    return summary.ok && problems.length === 0 ? 0 : 1;
  } finally {
    await shop.close();
    await sequelize.close();
    if (!options.keep) {
      // Our own temp folder goes whole; in a folder we were given, only our files.
      const files = options.dir
        ? ['', '-wal', '-shm', '-journal'].map((s) => databaseFile + s)
        : [dir];
      for (const f of files) rmSync(f, { recursive: true, force: true });
    }
  }
}

interface FiredOrders {
  readonly placed: number;
  readonly cancelled: number;
  readonly duplicateCancels: number;
  readonly rolledBack: { readonly orderId: string; readonly reason: string };
}

/** Place the burst of orders, cancel some, and let one roll back. */
async function placeOrders(shop: Shop): Promise<FiredOrders> {
  let placed = 0;
  let rolledBack: FiredOrders['rolledBack'] | undefined;
  for (let n = 1; n <= ORDERS; n++) {
    const id = `order-${pad(n)}`;
    try {
      await shop.placeOrder({ id, customerEmail: customerEmail(n), items: itemsOf(n) });
      placed += 1;
    } catch (error) {
      if (n !== ROLLED_BACK_ORDER) throw error;
      rolledBack = { orderId: id, reason: (error as Error).message };
    }
  }
  if (!rolledBack) throw new Error(`order-${pad(ROLLED_BACK_ORDER)} was expected to roll back`);

  let cancelled = 0;
  let duplicateCancels = 0;
  for (let n = CANCEL_EVERY; n <= ORDERS; n += CANCEL_EVERY) {
    if (await shop.cancelOrder(`order-${pad(n)}`, 'changed my mind')) cancelled += 1;
  }
  // A double click: the same cancellation again records nothing.
  if (!(await shop.cancelOrder(`order-${pad(CANCEL_EVERY)}`, 'changed my mind'))) {
    duplicateCancels += 1;
  }
  return { placed, cancelled, duplicateCancels, rolledBack };
}

function itemsOf(n: number): OrderLine[] {
  if (n === DECLINED_ORDER) return [{ sku: 'grand-piano', quantity: 1 }];
  if (n === ROLLED_BACK_ORDER) return [{ sku: 'signed-print', quantity: 5 }];
  const items: OrderLine[] = [{ sku: ['mug', 'tee', 'poster'][n % 3], quantity: 1 + (n % 4) }];
  if (n % 5 === 0) items.push({ sku: 'poster', quantity: 1 });
  return items;
}

function customerEmail(n: number): string {
  return n % SLOW_MAIL_EVERY === 0 ? `customer${n}@slow-mail.example` : `customer${n}@mail.example`;
}

interface RelayObservations {
  readonly delivered: Record<string, number>;
  readonly retried: number;
  readonly retriedBy: Record<string, { deliveries: number; firstError: string }>;
}

/**
 * Run a relay until the backlog is empty, with a live progress line on `err`.
 *
 * The relay calls `sleep` only when a claim found nothing due, so that is where the demo
 * looks at the backlog: nothing due that is pending, claimed or waiting out a retry means
 * done (the expiries scheduled two days ahead are not a backlog).
 */
async function relayUntilDone(
  shop: Shop,
  err: NodeJS.WritableStream & { isTTY?: boolean },
): Promise<RelayObservations> {
  const delivered: Record<string, number> = {};
  const retriedBy: RelayObservations['retriedBy'] = {};
  const failedOnce = new Set<string>();
  let retried = 0;
  let failures = 0;
  let dead = 0;
  const started = performance.now();
  const progress = new ProgressLine(err);
  const line = () => {
    const total = Object.values(delivered).reduce((a, b) => a + b, 0);
    return `   relay: ${total} delivered · ${failures} failed attempts (retried) · ${dead} dead · ${seconds(performance.now() - started)}`;
  };
  const unsubscribe = [
    shop.outbox.on('relay:delivered', ({ receiverKey, deliveryId }) => {
      delivered[receiverKey] = (delivered[receiverKey] ?? 0) + 1;
      if (failedOnce.has(deliveryId)) retried += 1;
      progress.update(line);
    }),
    shop.outbox.on('relay:failed', ({ deliveryId, receiverKey, error }) => {
      failures += 1;
      if (!failedOnce.has(deliveryId)) {
        failedOnce.add(deliveryId);
        retriedBy[receiverKey] ??= { deliveries: 0, firstError: error };
        retriedBy[receiverKey].deliveries += 1;
      }
      progress.update(line);
    }),
    shop.outbox.on('relay:deadLettered', () => {
      dead += 1;
      progress.update(line);
    }),
  ];

  const stop = new AbortController();
  const deadline = setTimeout(() => stop.abort(), DEADLINE_MS);
  try {
    await shop.outbox.runRelay({
      signal: stop.signal,
      pollIntervalMs: 5,
      sleep: async (ms, signal) => {
        if ((await backlogOf(shop)).owed === 0) stop.abort();
        else await sleep(ms, signal);
      },
    });
  } finally {
    clearTimeout(deadline);
    for (const off of unsubscribe) off();
    progress.done(line);
  }
  return { delivered, retried, retriedBy };
}

/**
 * The deliveries still owed, split by whether their due time has come: `owed` is work the
 * relay should be doing now, `scheduled` work that is on time (a due time ahead).
 */
async function backlogOf(shop: Shop): Promise<{ owed: number; scheduled: number }> {
  const [row] = await shop.sequelize.query<{ owed: number; scheduled: number }>(
    `SELECT COALESCE(SUM(CASE WHEN due_at IS NULL OR due_at <= ? THEN 1 ELSE 0 END), 0) AS owed,
            COALESCE(SUM(CASE WHEN due_at > ? THEN 1 ELSE 0 END), 0) AS scheduled
       FROM outbox_deliveries WHERE status IN ('pending', 'failed', 'claimed')`,
    { replacements: [Date.now(), Date.now()], type: QueryTypes.SELECT },
  );
  return { owed: Number(row.owed), scheduled: Number(row.scheduled) };
}

/** Read the outcome back from the database: the outbox's tables and the shop's. */
async function summarise(
  shop: Shop,
  run: {
    databaseFile: string;
    orders: FiredOrders;
    relay: RelayObservations;
    logLines: readonly string[];
    fireMs: number;
    relayMs: number;
    totalMs: number;
  },
): Promise<DemoSummary> {
  const { models, sequelize } = shop;
  const backlog = await shop.outbox.countDeliveries();
  const dead = await sequelize.query<DeadLetter>(
    `SELECT d.receiver_key AS "receiverKey", e.name AS "eventName", e.ordering_key AS "orderId",
            d.attempts, d.last_error AS error
       FROM outbox_deliveries d JOIN outbox_events e ON e.id = d.event_id
      WHERE d.status = 'dead' ORDER BY d.id`,
    { type: QueryTypes.SELECT },
  );
  const id = run.orders.rolledBack.orderId;
  const [{ n: eventsRecorded }] = await sequelize.query<{ n: number }>(
    'SELECT COUNT(*) AS n FROM outbox_events WHERE ordering_key = ?',
    { replacements: [id], type: QueryTypes.SELECT },
  );
  const rolledBack = {
    ...run.orders.rolledBack,
    eventsRecorded: Number(eventsRecorded),
    orderRows: await models.Order.count({ where: { id } }),
    payments: await models.Payment.count({ where: { orderId: id } }),
    mails: await models.SentMail.count({ where: { orderId: id } }),
    analyticsEvents: shop.analytics.received.filter((e) => e.orderingKey === id).length,
    logLines: run.logLines.filter((l) => l.includes(id)).length,
  };
  const { owed, scheduled } = await backlogOf(shop);
  const deliveredTotal = Object.values(run.relay.delivered).reduce((a, b) => a + b, 0);
  return {
    databaseFile: run.databaseFile,
    ordersPlaced: run.orders.placed,
    ordersCancelled: run.orders.cancelled,
    duplicateCancels: run.orders.duplicateCancels,
    delivered: run.relay.delivered,
    deliveredTotal,
    inOrderPerKey: shop.analytics.inOrderPerKey(),
    retried: run.relay.retried,
    retriedBy: run.relay.retriedBy,
    dead,
    owed,
    scheduled,
    rolledBack,
    onCommitLogLines: run.logLines.length,
    fireMs: run.fireMs,
    relayMs: run.relayMs,
    totalMs: run.totalMs,
    ok:
      nothingAbout(rolledBack) &&
      owed === 0 &&
      backlog.succeeded === deliveredTotal &&
      shop.analytics.inOrderPerKey(),
  };
}

/** Whether nothing at all exists or happened for the rolled-back order. */
function nothingAbout(r: DemoSummary['rolledBack']): boolean {
  return (
    r.eventsRecorded + r.orderRows + r.payments + r.mails + r.analyticsEvents + r.logLines === 0
  );
}

/** Why each receiver's count is what it is: the counts differ on purpose. */
const WHY_THIS_COUNT: Readonly<Record<string, string>> = {
  'analytics.forward':
    'every event (AnyEvent): each order placed, paid and cancelled, each row update',
  'mail.orderConfirmation': 'one per payment captured (a cancelled order is not charged)',
  'payments.capture': 'one per order placed, less the declined card',
  'shop.orderHistory': 'one per order row updated (captured: paid, cancelled, re-cancelled)',
  'shop.releaseStock': 'one per cancelled order',
};

function printSummary(s: DemoSummary, say: (line?: string) => void, problems: string[]): void {
  const width = String(s.deliveredTotal).length;
  const num = (n: number) => String(n).padStart(width);
  const indent = ' '.repeat(15 + width + 2);
  say();
  say(
    `Summary: ${seconds(s.totalMs)} in all (firing ${seconds(s.fireMs)}, relaying ${seconds(s.relayMs)})`,
  );
  say(`  delivered    ${num(s.deliveredTotal)}  deliveries, each at least once:`);
  const keyWidth = Math.max(...Object.keys(s.delivered).map((k) => k.length));
  for (const [key, n] of Object.entries(s.delivered).sort())
    say(
      `               ${num(n)}  ${key.padEnd(keyWidth)}  ${WHY_THIS_COUNT[key] ?? ''}`.trimEnd(),
    );
  say(
    s.inOrderPerKey
      ? `${indent}in order per order id (analytics saw each order's events in firing order)`
      : `${indent}OUT OF ORDER: analytics saw an order's events in another order than fired`,
  );
  say(`  retried      ${num(s.retried)}  deliveries failed, waited out a backoff, then succeeded:`);
  for (const [key, r] of Object.entries(s.retriedBy).sort()) {
    say(`${indent}${r.deliveries} × ${key}: ${r.firstError}`);
  }
  say(
    `  dead         ${num(s.dead.length)}  dead letters, kept in outbox_deliveries with their error:`,
  );
  for (const d of s.dead) {
    say(`${indent}${d.receiverKey} for ${d.orderId}, attempt ${d.attempts}: ${d.error}`);
  }
  const r = s.rolledBack;
  say(`  rolled back  ${num(1)}  ${r.orderId} (${r.reason})`);
  say(
    nothingAbout(r)
      ? `${indent}none delivered: no order row, no event, no payment, no mail, no log line`
      : `${indent}SOMETHING EXISTS FOR A ROLLED-BACK ORDER: ${JSON.stringify(r)}`,
  );
  say(
    `  onCommit     ${num(s.onCommitLogLines)}  "order placed" log lines, written after each commit (best effort)`,
  );
  say(
    `  scheduled    ${num(s.scheduled)}  shop.expireUnpaidOrder rows, due 48 hours after their order (due: { hours: 48 })`,
  );
  if (s.owed > 0) say(`  STILL OWED   ${num(s.owed)}  deliveries the relay did not finish`);
  for (const p of problems) say(`  PROBLEM      ${p}`);
}

/**
 * The relay's progress on stderr: redrawn in place on a terminal, at most ten times a
 * second; as a plain line now and then when stderr is a file or a pipe.
 */
class ProgressLine {
  readonly #tty: boolean;
  #last = 0;

  constructor(private readonly stream: NodeJS.WritableStream & { isTTY?: boolean }) {
    this.#tty = stream.isTTY === true;
  }

  update(text: () => string): void {
    const now = performance.now();
    if (now - this.#last < (this.#tty ? 100 : 1000)) return;
    this.#last = now;
    this.stream.write(this.#tty ? `\r\x1b[2K${text()}` : `${text()}\n`);
  }

  done(text: () => string): void {
    this.stream.write(this.#tty ? `\r\x1b[2K${text()}\n` : `${text()}\n`);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

function pad(n: number): string {
  return String(n).padStart(4, '0');
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
