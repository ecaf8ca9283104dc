/**
 * A batch's XADDs as ONE command: a Lua script run by `EVALSHA` that adds every entry in
 * order and answers one reply per entry.
 *
 * Why not only the pipeline: a pipeline already makes a batch one round trip, but ioredis
 * builds a command object, a promise and a RESP text per `XADD` (twelve arguments each),
 * and that per-command work was the relay's bottleneck to Redis: 8-12 µs of client CPU
 * per event against 3-5 µs for the script, whose one command carries six short arguments
 * per entry (the field names live in the script). Redis spends ~1 µs more per entry on the
 * script (1.4 → 2.5 µs), so the machine as a whole does less per event (bench/README.md,
 * "Measured here (issue 28, items 2–4)").
 *
 * What stays as the pipeline had it: the entries are added in the batch's order (a key's
 * events stay in order in their stream), each entry succeeds or fails on its own
 * (`redis.pcall`: a stream key holding another type fails that entry alone), and nothing
 * is reported sent that Redis did not answer. What differs: the script holds Redis for the
 * whole batch (about 1 ms for 500 entries) where a pipeline lets other clients in between
 * commands.
 */
import { createHash } from 'node:crypto';
import type { OutboxEvent } from '../../declare/types.js';
import { getBody, getHeaders } from '../message.js';
import { REDIS_STREAM_FIELDS } from './entry.js';

/** The arguments the script reads per entry (see {@link xaddScript}). */
const PER_ENTRY = 6;

/** The script and its SHA-1, which `EVALSHA` names it by. */
export interface XaddScript {
  readonly text: string;
  readonly sha: string;
}

/**
 * The script for a transport trimming to `maxLength` (or not). KEYS are the batch's
 * distinct streams; ARGV holds six values per entry: the index of its stream in KEYS
 * (negative when the entry has no ordering key, so the `ordering_key` field is left out,
 * as {@link redisStreamFields} leaves it out), the event id, its topic, the ordering key
 * (empty when none), the headers' JSON and the payload's JSON. It returns one reply per
 * entry, in order: the entry id Redis gave it, or `{message}` when Redis refused it.
 */
export function xaddScript(maxLength: number | undefined): XaddScript {
  const f = REDIS_STREAM_FIELDS;
  const lit = (s: string) => `'${s}'`;
  const trim = maxLength === undefined ? '' : `'MAXLEN', '~', ${maxLength}, `;
  const add = (keyed: boolean) =>
    `redis.pcall('XADD', KEYS[k], ${trim}'*', ${lit(f.id)}, ARGV[i + 1], ${lit(f.topic)}, ARGV[i + 2], ${
      keyed ? `${lit(f.orderingKey)}, ARGV[i + 3], ` : ''
    }${lit(f.headers)}, ARGV[i + 4], ${lit(f.payload)}, ARGV[i + 5])`;
  const text = `local out = {}
local n = 0
for i = 1, #ARGV, ${PER_ENTRY} do
  local k = tonumber(ARGV[i])
  local r
  if k > 0 then
    r = ${add(true)}
  else
    k = -k
    r = ${add(false)}
  end
  n = n + 1
  if type(r) == 'table' and r.err then out[n] = {r.err} else out[n] = r end
end
return out`;
  return { text, sha: createHash('sha1').update(text).digest('hex') };
}

/**
 * The script's KEYS and ARGV for these entries, in their order, as `EVALSHA` takes them
 * after the SHA and the key count: the keys, then six values per entry.
 */
export function xaddScriptArgs(
  entries: readonly { readonly stream: string; readonly event: OutboxEvent }[],
): { readonly numKeys: number; readonly args: string[] } {
  const keys = new Map<string, number>();
  const argv: string[] = new Array(entries.length * PER_ENTRY);
  let a = 0;
  for (const { stream, event } of entries) {
    let k = keys.get(stream);
    if (k === undefined) {
      k = keys.size + 1;
      keys.set(stream, k);
    }
    const key = event.orderingKey;
    argv[a++] = String(key === null ? -k : k);
    argv[a++] = event.id;
    argv[a++] = event.name;
    argv[a++] = key ?? '';
    argv[a++] = JSON.stringify(getHeaders(event));
    argv[a++] = getBody(event);
  }
  return { numKeys: keys.size, args: [...keys.keys(), ...argv] };
}

/**
 * The script's reply for its `index`th entry: the entry id (sent), or the error Redis gave
 * (failed); anything else — a reply missing or of another shape — fails the entry, since
 * nothing may be reported sent that Redis did not acknowledge.
 */
export function xaddScriptReply(reply: unknown, index: number): string | Error {
  const one = Array.isArray(reply) ? reply[index] : undefined;
  if (typeof one === 'string') return one;
  if (Array.isArray(one) && typeof one[0] === 'string') return new Error(one[0]);
  return one === undefined
    ? new Error('Redis gave no reply to XADD')
    : new Error(`XADD answered ${JSON.stringify(one)}, not an entry id`);
}

/** Whether Redis refused the script because it does not have it cached: send the text. */
export function isNoScript(error: unknown): boolean {
  return /^NOSCRIPT\b/.test(String((error as { message?: unknown } | null)?.message));
}

/**
 * Whether Redis refuses scripts to this client for good (an ACL without EVALSHA, a proxy
 * that has no scripting): the transport then sends by pipeline from here on. Such a
 * refusal comes before the script ran, so nothing of the batch was added.
 */
export function isScriptingRefused(error: unknown): boolean {
  return /^(NOPERM|ERR unknown command)\b/.test(
    String((error as { message?: unknown } | null)?.message),
  );
}
