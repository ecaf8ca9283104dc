/**
 * A handler's transaction on PostgreSQL in as few round trips as the guarantee allows.
 *
 * Sequelize's generic transaction costs three round trips around the handler's own work
 * (START TRANSACTION, the acknowledgement, COMMIT), each through its query path. This
 * one gives the handler a real Sequelize `Transaction` on a connection of the pool, but:
 *
 * - **The connection and BEGIN come with the handler's first statement.** The handler
 *   starts at once; its transaction takes a connection from the pool when its first
 *   statement asks for one (see {@link lazyConnection}), and that connection sends
 *   `START TRANSACTION` just before the statement (models, `sequelize.query`, `fire()`,
 *   savepoints: all go through the client's `query`). A handler that writes nothing to
 *   this database (it called an API, sent a mail) holds no connection while it runs and
 *   opens no transaction at all.
 * - **The acknowledgement commits in one round trip.** After a handler that wrote, the
 *   acknowledgement and `COMMIT` go as one simple-protocol message; the acknowledgement
 *   raises an error when its compare-and-set matched nothing (the claim was lost), so
 *   PostgreSQL skips the COMMIT, and the work is rolled back with the transaction. After a
 *   handler that wrote nothing, the acknowledgement commits on its own: there is no work to
 *   commit with it, so those of handlers ending together go as one statement (ack-groups.ts).
 *
 * What Sequelize's `transaction()` gives, this keeps: `afterCommit` hooks run after a
 * COMMIT that succeeded (and not after one that failed, unlike Sequelize's, see
 * fire/when-committed.ts), savepoints nest, a connection whose COMMIT or ROLLBACK went
 * unanswered is destroyed rather than reused. It is used only where it can keep all of
 * that: not with Sequelize's CLS namespace (`Sequelize.useCLS`) or an `isolationLevel`
 * set on the instance, which take Sequelize's own path (see {@link canRunLean}).
 */
import { type Sequelize, Transaction } from 'sequelize';
import {
  clsNamespace,
  instanceOptions,
  type LeanTransactionFields,
  leanFields,
} from '../../sequelize/internals.js';
import { markCommitted } from '../../transaction/when-committed.js';
import {
  acquireConnection,
  connectionManager,
  isPgClient,
  logStatement,
  type PgClient,
  type PgStatement,
  runStatement,
} from './pg-client.js';

/** The text of the error the one-round-trip acknowledgement raises when the claim is lost. */
export const LOST_CLAIM_MARK = 'outboxkit: the delivery is no longer claimed by this worker';

/** How this transaction acknowledges its row, in both forms. */
export interface LeanAcknowledgement {
  /** The prepared acknowledgement, committing on its own (the handler wrote nothing). */
  prepared(at: Date): PgStatement;
  /**
   * The acknowledgement as one statement with literal values (quoted by the client),
   * raising {@link LOST_CLAIM_MARK} when it matched no row; sent with `COMMIT`.
   */
  literal(client: PgClient, at: Date): string;
  /**
   * The acknowledgement of a handler that took no connection, sent with those of other
   * such handlers of the same claim that end while one is in flight (ack-groups.ts);
   * resolves true when the row was acknowledged. Without it, {@link prepared} alone.
   */
  grouped?(at: Date): Promise<boolean>;
  /** The completion time, read once the work is done. */
  at(): Date;
  /** Told of an `afterCommit` hook that threw: the commit stands, the hook is reported. */
  afterCommitFailed?(error: unknown): void;
}

/** What Sequelize 6 keeps on a transaction and does not type. */
/**
 * Whether the lean transaction can stand in for Sequelize's here: no CLS namespace (whose
 * ambient transaction Sequelize's `transaction()` sets) and no instance-wide isolation
 * level (which Sequelize's BEGIN applies).
 */
export function canRunLean(sequelize: Sequelize): boolean {
  return !clsNamespace(sequelize) && !instanceOptions(sequelize).isolationLevel;
}

/** The statement a lost claim makes fail: see {@link LeanAcknowledgement.literal}. */
export function failingWhenLost(update: string): string {
  return `WITH acknowledged AS (${update}
        RETURNING 1
      )
      SELECT (CASE WHEN count(*) = 1 THEN NULL ELSE '${LOST_CLAIM_MARK}' END)::int AS lost
      FROM acknowledged`;
}

/** Whether an error is the one-round-trip acknowledgement finding the claim lost. */
function isLostClaim(error: unknown): boolean {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message.includes(LOST_CLAIM_MARK);
}

/**
 * Run `work` in a transaction and acknowledge in it, as the module header says.
 * @returns `'acknowledged'` after the COMMIT (and the afterCommit hooks), `'lost'` when
 * the claim was gone (nothing of the work committed).
 */
export async function runLeanTransaction(
  sequelize: Sequelize,
  work: (transaction: Transaction) => Promise<void>,
  ack: LeanAcknowledgement,
): Promise<'acknowledged' | 'lost'> {
  const transaction = new Transaction(sequelize, {});
  const tx = leanFields(transaction);
  const held = lazyConnection(sequelize, tx);

  /** End the transaction: give the connection back, or destroy it when it is in doubt. */
  const end = async (finished: 'commit' | 'rollback', inDoubt: boolean) => {
    tx.finished = finished;
    const taken = await held.settled();
    if (!taken) return; // the work never took a connection: nothing to give back
    taken.begin.restore();
    if (inDoubt) await tx.forceCleanup();
    else tx.cleanup();
  };
  /** Roll back what the work sent; a ROLLBACK that fails leaves the connection in doubt. */
  const rollBack = async () => {
    const taken = await held.settled();
    if (!taken?.begin.sent()) return end('rollback', false);
    const rolledBack = await taken.begin
      .original('ROLLBACK')
      .then(() => true)
      .catch(() => false);
    return end('rollback', !rolledBack);
  };

  try {
    await work(transaction);
  } catch (error) {
    if (!tx.finished) await rollBack();
    throw error;
  }
  if (tx.finished) {
    (await held.settled())?.begin.restore();
    throw new Error(
      `a handler's transaction was ended by the handler (${tx.finished}); the relay commits it with the acknowledgement`,
    );
  }

  const at = ack.at();
  const taken = await held.settled();
  if (!taken?.begin.sent()) {
    // Nothing of the work is in this transaction: the acknowledgement commits on its own,
    // on the connection the work took, or on one taken now.
    let acknowledged: boolean;
    try {
      if (taken === undefined && ack.grouped) {
        // No connection taken: grouped with the other handlers' that wrote nothing.
        acknowledged = await ack.grouped(at);
      } else {
        const { client, begin } = taken ?? (await held.take());
        begin.restore();
        const statement = ack.prepared(at);
        logStatement(sequelize, tx.id, statement.text);
        acknowledged = (await runStatement(client, statement)).rowCount === 1;
      }
    } catch (error) {
      await end('rollback', true);
      throw error;
    }
    if (!acknowledged) {
      await end('rollback', false);
      return 'lost';
    }
  } else {
    try {
      await taken.begin.started();
      await taken.begin.original(`${ack.literal(taken.client, at)};\nCOMMIT`);
    } catch (error) {
      await rollBack();
      if (isLostClaim(error)) return 'lost';
      throw error;
    }
  }
  markCommitted(transaction);
  await end('commit', false);
  for (const hook of tx._afterCommitHooks) {
    try {
      await hook.apply(transaction, [transaction]);
    } catch (error) {
      ack.afterCommitFailed?.(error);
    }
  }
  return 'acknowledged';
}

/** The handler transaction's connection once taken, with its deferred BEGIN. */
interface TakenConnection {
  readonly client: PgClient;
  readonly begin: LazyBegin;
}

/**
 * The transaction's connection, taken from the pool when first asked for rather than
 * before the handler starts: `transaction.connection` is a getter until then, and
 * Sequelize awaits it (`sequelize.query` runs `await transaction.connection`, a savepoint
 * `await parent.connection`), so the handler's first statement takes it, and every
 * statement after finds it. So the handler starts without waiting on the pool, and a
 * handler that writes nothing here (it called an API, sent a mail) holds no connection
 * while it runs: ten such handlers at once do not empty a pool of five. Once taken, the
 * property is the client itself, as on a Sequelize transaction.
 */
function lazyConnection(sequelize: Sequelize, tx: LeanTransactionFields) {
  const manager = connectionManager(sequelize);
  let taking: Promise<TakenConnection> | undefined;
  const settle = (connection: unknown) =>
    Object.defineProperty(tx, 'connection', {
      value: connection,
      writable: true,
      configurable: true,
      enumerable: true,
    });
  const take = (): Promise<TakenConnection> => {
    taking ??= (async () => {
      const connection = await acquireConnection(sequelize, { uuid: tx.id });
      if (!isPgClient(connection)) {
        manager.releaseConnection(connection);
        throw new Error('outboxkit: the PostgreSQL pool gave a connection that is not a pg client');
      }
      connection.uuid = tx.id;
      const begin = lazyBegin(connection, (text) => logStatement(sequelize, tx.id, text));
      settle(connection); // from here on the property is the client, not this getter
      return { client: connection, begin };
    })();
    taking.catch(() => {}); // observed by whoever asked; settled() reads it as "none"
    return taking;
  };
  Object.defineProperty(tx, 'connection', {
    get: () => take().then((taken) => taken.client),
    set: settle,
    configurable: true,
    enumerable: true,
  });
  return {
    /** Take the connection now (or the one being taken). */
    take,
    /** The connection the work took, once its taking settled; undefined when it took none. */
    settled: async (): Promise<TakenConnection | undefined> =>
      taking?.then(
        (taken) => taken,
        () => undefined,
      ),
  };
}

type QueryFn = (this: PgClient, ...args: unknown[]) => unknown;

/** A connection's deferred BEGIN (see {@link lazyBegin}). */
interface LazyBegin {
  /** Whether BEGIN was sent: the handler ran a statement in its transaction. */
  sent(): boolean;
  /** Resolves when BEGIN succeeded; rejects with its error. */
  started(): Promise<unknown>;
  /** The prototype's query, which no BEGIN precedes. */
  original(text: string): Promise<unknown>;
  /** Take the wrapper off the connection, before it goes back to the pool. */
  restore(): void;
}

/**
 * Make `client` send `START TRANSACTION` just before the first statement it is given, by
 * an own `query` property over the prototype's, removed by `restore()` before the
 * connection goes back to the pool. Every form of node-postgres' `query` is kept: the
 * callback form (Sequelize's), the promise form, and submittables (cursors, streams),
 * which are queued behind the BEGIN on the same connection.
 */
function lazyBegin(client: PgClient, log: (text: string) => void): LazyBegin {
  const own = client as unknown as { query: QueryFn };
  const original = own.query;
  let begun: Promise<unknown> | undefined;
  const startOnce = (): Promise<unknown> => {
    if (!begun) {
      log('START TRANSACTION');
      begun = Promise.resolve(original.call(client, 'START TRANSACTION'));
      begun.catch(() => {}); // observed by each statement behind it, and by started()
    }
    return begun;
  };
  const wrapper: QueryFn = function query(...args) {
    const started = startOnce();
    const last = args[args.length - 1];
    if (typeof last === 'function') {
      started.then(
        () => original.apply(client, args),
        (error: unknown) => (last as (error: unknown) => void)(error),
      );
      return undefined;
    }
    const first = args[0] as { submit?: unknown } | null | undefined;
    if (first && typeof first === 'object' && typeof first.submit === 'function') {
      return original.apply(client, args);
    }
    return started.then(() => original.apply(client, args));
  };
  Object.defineProperty(client, 'query', { value: wrapper, configurable: true, writable: true });
  return {
    sent: () => begun !== undefined,
    started: () => begun ?? Promise.resolve(),
    original: (text: string): Promise<unknown> => {
      log(text);
      return Promise.resolve(original.call(client, text));
    },
    restore: () => {
      if (Object.getOwnPropertyDescriptor(client, 'query')?.value === wrapper)
        delete (client as unknown as { query?: unknown }).query;
    },
  };
}
