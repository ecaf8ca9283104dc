/**
 * What outboxkit asks of a pg-boss instance, typed by shape so `outboxkit`'s types need no
 * pg-boss installed. pg-boss itself is never imported: the app constructs and starts its
 * `PgBoss` (its connection, its schema, its maintenance) and hands it in, since pg-boss
 * owns a pool and timers that an outbox must not start behind the app's back.
 *
 * pg-boss 10 is the version supported here (Node 20); pg-boss 11+ needs Node 22.
 */

import { ConfigurationError } from '../../errors/outbox-error.js';

/** One job for `boss.insert()` (pg-boss `JobInsert`). */
export interface PgBossJobInsert {
  readonly id?: string;
  readonly name: string;
  readonly data?: object;
  readonly retryLimit?: number;
  readonly expireInSeconds?: number;
  readonly singletonKey?: string;
  readonly priority?: number;
}

/** A job as a pg-boss worker's handler is handed it (the part outboxkit reads). */
export interface PgBossJob<T = unknown> {
  readonly id: string;
  readonly name: string;
  readonly data: T;
}

/** The part of a started `PgBoss` (pg-boss 10) outboxkit uses. */
export interface PgBossClient {
  /** Create a queue (idempotent in pg-boss 10), with its options (`retryLimit` …). */
  createQueue(name: string, options?: Record<string, unknown>): Promise<void>;
  /** Add jobs in one statement; a job whose id exists already in its queue is skipped. */
  insert(jobs: PgBossJobInsert[]): Promise<void>;
  /** Register a worker of `name`'s jobs, fetched `batchSize` at a time; resolves to its id. */
  work<T>(
    name: string,
    options: Record<string, unknown>,
    handler: (jobs: PgBossJob<T>[]) => Promise<unknown>,
  ): Promise<string>;
  /** Stop the worker of that id. */
  offWork(options: { id: string }): Promise<void>;
  /** Wake the worker of that id now, rather than at its next poll. */
  notifyWorker?(workerId: string): void;
}

/** Refuse what is plainly not a pg-boss instance, before anything is sent. */
export function checkPgBoss(who: string, boss: unknown): PgBossClient {
  const b = boss as Partial<PgBossClient> | undefined;
  if (
    typeof b?.insert !== 'function' ||
    typeof b.createQueue !== 'function' ||
    typeof b.work !== 'function'
  ) {
    throw new ConfigurationError(
      `${who} needs a started PgBoss instance (pg-boss 10: \`const boss = new PgBoss(url); await boss.start()\`)`,
    );
  }
  return b as PgBossClient;
}

/**
 * Make sure each queue exists once per client (pg-boss 10 sends nothing to a queue that
 * was never created: its insert joins the queue table and drops the job). `createQueue` is
 * idempotent (`ON CONFLICT DO NOTHING`); a failure is not remembered, so the next send
 * tries again.
 */
export function queueCreator(
  boss: PgBossClient,
  options: Record<string, unknown>,
): (name: string) => Promise<void> {
  const created = new Map<string, Promise<void>>();
  return (name) => {
    let done = created.get(name);
    if (!done) {
      done = boss.createQueue(name, { ...options, name });
      created.set(name, done);
      done.catch(() => created.delete(name));
    }
    return done;
  };
}
