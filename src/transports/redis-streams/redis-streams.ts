import type { Redis as IoRedis } from 'ioredis';
import { checkOptionNames, optionNames } from '../../declare/option-keys.js';
import type {
  DeliveryItem,
  DeliveryResult,
  OutboxDelivery,
  OutboxEvent,
} from '../../declare/types.js';
import { ConfigurationError } from '../../errors/outbox-error.js';
import { abortable } from '../promises.js';
import { redisStreamFields } from './entry.js';
import { checkRedisUrl, loadIoRedis, quitOrDrop } from './load-ioredis.js';
import {
  isNoScript,
  isScriptingRefused,
  xaddScript,
  xaddScriptArgs,
  xaddScriptReply,
} from './xadd-script.js';

/**
 * What the transport needs of a Redis client: a pipeline of `XADD`s, and scripts where
 * the client runs them. An ioredis `Redis` (or `Cluster`) is one; typed by shape so
 * `outboxkit`'s types do not need ioredis installed.
 */
export interface RedisStreamsClient {
  /** A pipeline that sends its commands in one round trip (ioredis `redis.pipeline()`). */
  pipeline(): RedisStreamsPipeline;
  /**
   * `EVALSHA` (ioredis `redis.evalsha`): with it and {@link eval}, on a client that is not
   * a cluster, a batch goes as one script run (see xadd-script.ts) instead of a pipeline.
   */
  evalsha?(sha: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  /** `EVAL` (ioredis `redis.eval`): the script's text, sent when Redis lacks it cached. */
  eval?(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  /**
   * True on an ioredis `Cluster`, which sends by pipeline: a script's keys must share a
   * slot, where a pipeline's need only share a node.
   */
  readonly isCluster?: boolean;
}

/** The part of an ioredis pipeline the transport uses. */
export interface RedisStreamsPipeline {
  /** Queue an `XADD` to stream `key` on the pipeline. */
  xadd(key: string, ...args: (string | number)[]): unknown;
  /** One `[error, reply]` per queued command, in order (ioredis's `exec()`). */
  exec(): Promise<[error: Error | null, reply: unknown][] | null>;
}

/** Options of {@link redisStreams}. Give `url` or `client`, not both. */
export interface RedisStreamsOptions {
  /**
   * Where Redis is (`redis://[:password@]host:port[/db]`, `rediss://` for TLS). The
   * transport opens its own ioredis connection on the first send and closes it in
   * `close()`. The connection fails a send fast while Redis is unreachable (one reconnect
   * per command, no replay of unanswered commands after a reconnect), so the relay records
   * the failure and retries with its own backoff instead of the client queueing silently.
   */
  readonly url?: string;
  /**
   * An ioredis client of your own (your TLS, Sentinel, retry settings). Used as it is and
   * never closed by `close()`: its lifetime is yours.
   */
  readonly client?: RedisStreamsClient;
  /**
   * The stream each event is added to: a name, or a function of the event (a stream per
   * tenant, per aggregate). The reference's default is the event's topic, so each event
   * name is its own stream and consumers subscribe by name.
   * @defaultValue the event's name (`shop.OrderPlaced`)
   */
  readonly stream?: string | ((event: OutboxEvent) => string);
  /**
   * Trim each stream to about this many entries (`XADD … MAXLEN ~ maxLength`). Approximate
   * trimming keeps at least `maxLength` and removes only whole internal nodes, which costs
   * next to nothing; exact trimming would cost on every add. Unbounded when omitted: a
   * stream then grows until consumers `XTRIM` or `XDEL` it.
   * @defaultValue no trimming
   */
  readonly maxLength?: number;
  /** A name for logs and the catalogue. @defaultValue `'redis-streams'` */
  readonly name?: string;
}

/**
 * The ioredis settings of a connection the transport opens from a `url`: a send fails
 * fast while Redis is unreachable (the relay retries, with its own backoff), and a command
 * left unanswered by a lost connection fails rather than being replayed later, when the
 * relay may already have recorded it failed (that would be a duplicate, never a loss).
 */
const OWN_CONNECTION = {
  maxRetriesPerRequest: 1,
  autoResendUnfulfilledCommands: false,
  connectionName: 'outboxkit-redis-streams',
} as const;

/** Every option of {@link redisStreams}, to refuse a misspelt one. */
const REDIS_STREAMS_OPTIONS = optionNames<RedisStreamsOptions>()([
  'url',
  'client',
  'stream',
  'maxLength',
  'name',
]);

/**
 * A transport that adds each event to a Redis stream: one `XADD` per event, a batch sent
 * in one round trip — as ONE script run (`EVALSHA` of xadd-script.ts, which adds the
 * entries in order, each on its own; the cheapest form for the relay's CPU) or, on a
 * cluster client, a client without scripts, or a server that refuses them, through ONE
 * pipeline (no MULTI, since each item succeeds or fails on its own) — the stream trimmed
 * approximately to `maxLength`. Each entry carries the fields of
 * {@link REDIS_STREAM_FIELDS} — `id` (the event id consumers deduplicate on), `topic`,
 * `ordering_key`, `headers` (JSON) and `payload` (JSON) — under an id Redis assigns, so a
 * stream's entries are in the order they were added: a key's events, which the relay sends
 * one per batch in sequence order, stay in order in their stream.
 *
 * Each item's result is its own reply from the pipeline: an item Redis refused (a stream
 * key holding another type) fails alone. A lost connection fails the whole batch, and
 * nothing is reported sent that Redis did not acknowledge. ioredis is an optional peer
 * dependency, loaded on the first send.
 *
 * @example
 * ```ts
 * receiver(AnyEvent, { deliver: redisStreams({ url: 'redis://localhost:6379', maxLength: 100_000 }) })
 * ```
 * @throws ConfigurationError when neither or both of `url` and `client` are given, the URL
 *   is not `redis://`/`rediss://`, `stream` is empty, or `maxLength` is not an integer ≥ 1.
 */
export function redisStreams(options: RedisStreamsOptions): OutboxDelivery {
  checkOptionNames('redisStreams', options, REDIS_STREAMS_OPTIONS);
  const who = 'redisStreams';
  if ((options.url === undefined) === (options.client === undefined)) {
    throw new ConfigurationError(
      `${who}() takes a url or a client, exactly one (got ${options.url === undefined ? 'neither' : 'both'})`,
    );
  }
  const url = options.url === undefined ? undefined : checkRedisUrl(who, options.url);
  const { stream, maxLength } = options;
  if (stream !== undefined && typeof stream !== 'function' && !isStreamName(stream)) {
    throw new ConfigurationError(
      `${who}({ stream }) must be a non-empty string or a function of the event (got ${JSON.stringify(stream)})`,
    );
  }
  if (maxLength !== undefined && !(Number.isInteger(maxLength) && maxLength >= 1)) {
    throw new ConfigurationError(`${who}({ maxLength }) must be an integer ≥ 1 (got ${maxLength})`);
  }
  const trim: readonly (string | number)[] =
    maxLength === undefined ? [] : ['MAXLEN', '~', maxLength];
  const streamOf = (event: OutboxEvent): string => {
    const name = typeof stream === 'function' ? stream(event) : (stream ?? event.name);
    if (!isStreamName(name))
      throw new ConfigurationError(
        `${who}({ stream }) gave ${JSON.stringify(name)} for event ${event.id} (${event.name}); a stream name is a non-empty string`,
      );
    return name;
  };

  const script = xaddScript(maxLength);
  /** Whether batches go as the script: until Redis refuses scripts to this client. */
  let scripted = true;
  /**
   * The batch as one script run: `EVALSHA`, and `EVAL` (which caches it) when Redis does
   * not have it yet. The replies, or undefined when Redis refuses scripts to this client
   * (before running anything): the batch then goes by pipeline, and every batch after it.
   */
  const byScript = async (
    redis: RedisStreamsClient,
    entries: readonly { stream: string; event: OutboxEvent }[],
  ): Promise<unknown[] | undefined> => {
    const run = async (chunk: readonly { stream: string; event: OutboxEvent }[]) => {
      const { numKeys, args } = xaddScriptArgs(chunk);
      try {
        return await redis.evalsha!(script.sha, numKeys, ...args);
      } catch (error) {
        if (!isNoScript(error)) throw error;
        return await redis.eval!(script.text, numKeys, ...args);
      }
    };
    try {
      if (entries.length <= SCRIPT_ENTRIES) return (await run(entries)) as unknown[];
      // A batch larger than a script run takes (its arguments are spread into one call):
      // several runs, written one after the other on the connection, so in order.
      const chunks: (typeof entries)[] = [];
      for (let i = 0; i < entries.length; i += SCRIPT_ENTRIES)
        chunks.push(entries.slice(i, i + SCRIPT_ENTRIES));
      const replies = await Promise.all(chunks.map(run));
      return replies.flatMap((reply, c) =>
        Array.isArray(reply) ? reply : new Array(chunks[c].length).fill(reply),
      );
    } catch (error) {
      if (!isScriptingRefused(error)) throw error;
      scripted = false;
      return undefined;
    }
  };

  let client: RedisStreamsClient | undefined = options.client;
  /** The connection opened from `url`; ours to close. */
  let own: IoRedis | undefined;
  let opening: Promise<RedisStreamsClient> | undefined;
  let closed = false;

  const connection = (): Promise<RedisStreamsClient> => {
    if (client) return Promise.resolve(client);
    opening ??= (async () => {
      const Redis = await loadIoRedis(`${who}()`);
      if (closed) throw closedError();
      own = new Redis(url!, OWN_CONNECTION);
      // Without a listener ioredis prints every connection error to the console; a lost
      // connection shows up instead as the failed sends the relay records and retries.
      own.on('error', () => {});
      client = own;
      return own;
    })().finally(() => {
      opening = undefined;
    });
    return opening;
  };

  return {
    name: options.name ?? 'redis-streams',
    async deliverBatch(
      items: readonly DeliveryItem[],
      { signal },
    ): Promise<readonly DeliveryResult[]> {
      // Stopping or timed out before anything was sent: send nothing.
      if (signal.aborted) return items.map(() => ({ status: 'failed', error: signal.reason }));
      if (closed) throw closedError();
      const redis = await abortable(connection(), signal);
      // The item each reply belongs to; an item whose stream could not be named is not
      // sent and fails alone.
      const results: DeliveryResult[] = new Array(items.length);
      const queued: number[] = [];
      const entries: { stream: string; event: OutboxEvent }[] = [];
      for (let i = 0; i < items.length; i++) {
        const { event } = items[i];
        try {
          entries.push({ stream: streamOf(event), event });
          queued.push(i);
        } catch (error) {
          results[i] = { status: 'failed', error };
        }
      }
      if (queued.length === 0) return results;
      const replies =
        scripted && redis.evalsha && redis.eval && !redis.isCluster
          ? await abortable(byScript(redis, entries), signal)
          : undefined;
      if (replies !== undefined) {
        for (let r = 0; r < queued.length; r++) {
          const reply = xaddScriptReply(replies, r);
          results[queued[r]] =
            typeof reply === 'string' ? SENT : { status: 'failed', error: reply };
        }
        return results;
      }
      const pipeline = redis.pipeline();
      for (const { stream: key, event } of entries)
        pipeline.xadd(key, ...trim, '*', ...redisStreamFields(event));
      const piped = await abortable(pipeline.exec(), signal);
      queued.forEach((item, r) => {
        const reply = piped?.[r];
        if (!reply) {
          results[item] = { status: 'failed', error: new Error('Redis gave no reply to XADD') };
        } else if (reply[0]) {
          results[item] = { status: 'failed', error: reply[0] };
        } else if (typeof reply[1] !== 'string') {
          results[item] = {
            status: 'failed',
            error: new Error(`XADD answered ${JSON.stringify(reply[1])}, not an entry id`),
          };
        } else {
          results[item] = SENT;
        }
      });
      return results;
    },
    async close() {
      closed = true;
      await opening?.catch(() => {});
      const c = own;
      own = undefined;
      client = undefined;
      if (!c) return;
      await quitOrDrop(c);
    },
  };
}

const SENT: DeliveryResult = Object.freeze({ status: 'sent' });

/**
 * The most entries one script run carries (six arguments each, spread into one call): a
 * larger batch goes as several runs, in order, still in one round trip's worth of writes.
 */
const SCRIPT_ENTRIES = 2_000;

function isStreamName(name: unknown): name is string {
  return typeof name === 'string' && name.length > 0;
}

function closedError(): Error {
  return new Error('redisStreams transport is closed');
}
