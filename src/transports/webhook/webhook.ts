/**
 * `webhook()`: a transport POSTing each event to an HTTP endpoint, signed (the
 * topic-outbox reference's `WebhookDelivery`), over undici, loaded lazily.
 *
 * What it promises, and why:
 * - the body is `getBody(event)` exactly, and `sha256=<hex HMAC-SHA256 of those bytes>`
 *   goes in the signature header, so a receiver verifies what it got byte for byte;
 * - any answer but a 2xx fails the attempt (the relay retries and dead-letters); a 410
 *   Gone is a `PermanentFailure` (the endpoint said it will never take another); a 429 or
 *   503 with `Retry-After` is the destination saying when to come back, and the retry is
 *   scheduled then instead of on the backoff curve;
 * - a redirect is never followed (a 3xx is a failure), so the URL checked is the URL
 *   requested: a redirect to 169.254.169.254 cannot walk around the guard;
 * - `allowsUrl` runs before every request; every connection resolves its host ONCE,
 *   checks each address with `allowsAddress` (`isPublicAddress` by default) and connects
 *   to exactly those addresses, so no DNS answer can change between check and connect;
 * - the secret signs and is never written anywhere: error messages name the endpoint by
 *   its origin only (a path or query may carry a token), never a header or the secret.
 */
import { setMaxListeners } from 'node:events';
import type { Dispatcher } from 'undici';
import { checkOptionNames, optionNames } from '../../declare/option-keys.js';
import type {
  DeliveryContext,
  DeliveryItem,
  DeliveryResult,
  OutboxDelivery,
  OutboxEvent,
} from '../../declare/types.js';
import { ConfigurationError, DeliveryError } from '../../errors/outbox-error.js';
import { PermanentFailure, RetryAfter } from '../../errors/signals.js';
import { consoleLogger, type OutboxLogger } from '../../observe/logger.js';
import { getBody, getHeaders, ORDERING_KEY_HEADER } from '../message.js';
import {
  type AllowsAddress,
  bareHost,
  checkedLookup,
  reasonSuffix,
  systemLookup,
  urlShapeProblem,
  WebhookAddressRefused,
  type WebhookLookup,
} from './guard.js';
import { loadUndici, type Undici } from './load-undici.js';
import { isPublicAddress } from './public-address.js';
import { retryAfterSeconds } from './retry-after.js';
import { DEFAULT_SIGNATURE_HEADER, signBody } from './signature.js';

/** How many characters of a response body and of an error a {@link WebhookResult} keeps. */
export const WEBHOOK_RESULT_MAX_LENGTH = 4000;

/** Where one event goes: what a subscriber registered. */
export interface WebhookTarget {
  /** The endpoint (http: or https:). */
  readonly url: string | URL;
  /** The key the body is signed with; without one the request goes unsigned. */
  readonly secret?: string | Uint8Array;
  /** Headers of this subscriber's requests, over the webhook's own `headers`. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * What one attempt got, as the reference's `result_field` records it: the status and the
 * response body (`null` without an answer) and the error (`null` for a 2xx), the body and
 * the error cut to {@link WEBHOOK_RESULT_MAX_LENGTH} characters, a NUL written as U+FFFD
 * (PostgreSQL's JSON and text hold none), never a secret.
 */
export interface WebhookResult {
  readonly statusCode: number | null;
  readonly body: string | null;
  readonly error: string | null;
}

/** The options of {@link webhook} besides where it sends. */
export interface WebhookCommonOptions {
  /** A name for logs and the catalogue. @defaultValue `'webhook'` */
  readonly name?: string;
  /**
   * How long one request may take, connecting to the last byte of the answer, in
   * milliseconds; past it the request is aborted and the attempt fails. The relay's own
   * attempt limit (and a stop) also abort it, whichever comes first.
   * @defaultValue 10000
   */
  readonly timeoutMs?: number;
  /**
   * Headers of every request. A target's headers and the event's own go over them;
   * `content-type` and the signature header always are the webhook's.
   */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Called with the URL before every request; `false` (or a rejection) refuses it: the
   * event is not sent and the attempt fails, retried like any failure. For a policy of
   * your own (an allowlist of domains, a tenant's verified hosts). The network guard is
   * `allowsAddress`, which sees the resolved addresses; `isPublicUrl` fits here too.
   */
  readonly allowsUrl?: (url: string) => boolean | Promise<boolean>;
  /**
   * Called with every address a request is about to connect to (after DNS resolution, or
   * the URL's own IP address) and the host name; `false` refuses the connection before a
   * byte is sent. The connection then goes to exactly the addresses checked.
   * `isPublicAddress` by default, refusing loopback, private, link-local (cloud metadata),
   * carrier-grade NAT, IPv6 ULA and IPv4-mapped addresses: a subscriber's URL cannot reach
   * into the service's own network. Pass `() => true` for endpoints inside it.
   * @defaultValue isPublicAddress
   */
  readonly allowsAddress?: AllowsAddress;
  /** How host names are resolved (see {@link WebhookLookup}). @defaultValue the system resolver */
  readonly lookup?: WebhookLookup;
  /**
   * Certificate authorities (PEM) that `https:` endpoints' certificates may chain to,
   * instead of Node's bundled ones: for endpoints inside your network signed by your own
   * CA. The certificate is always checked against the URL's host name, also when the
   * connection goes to an address the guard pinned.
   * @defaultValue Node's bundled root certificates
   */
  readonly ca?: string | Uint8Array | readonly (string | Uint8Array)[];
  /**
   * The header the signature `sha256=<HMAC-SHA256 of the body>` goes in: another name for
   * receivers that expect their own (`X-Webhook-Signature`).
   * @defaultValue `'outbox-signature'`
   */
  readonly signatureHeader?: string;
  /**
   * Called after every attempt with what it got (the reference's `result_field`): store
   * it beside your subscription to show a subscriber its deliveries. The outbox's own
   * row keeps only `last_error`, so the answer's body is handed to you rather than
   * written there. Awaited; a throw is logged and does not change the outcome (the
   * request already went or failed).
   */
  readonly onResult?: (result: WebhookResult, item: DeliveryItem) => void | Promise<void>;
  /**
   * How many requests of one `deliverBatch` run at once. Events of one ordering key
   * always go one after the other, in order, per receiver and fan-out target (a failing
   * target holds back only its own later events, never a sibling target's).
   * @defaultValue 4
   */
  readonly concurrency?: number;
  /** The clock a `Retry-After` date is counted from. @defaultValue `() => new Date()` */
  readonly now?: () => Date;
  /** Where a failing `onResult` is reported. @defaultValue consoleLogger */
  readonly logger?: OutboxLogger;
}

/** One endpoint for every event, signed with `secret`. */
export interface WebhookUrlOptions extends WebhookCommonOptions {
  readonly url: string | URL;
  /** The signing key; without one the requests go unsigned. */
  readonly secret?: string | Uint8Array;
  readonly target?: undefined;
}

/**
 * The endpoint of each event's subscriber. `context.target` is the delivery's fan-out
 * target (a receiver's `targets`), so one webhook receiver serves every subscriber:
 * `targets` names the subscriptions, `target` looks one up.
 */
export interface WebhookTargetOptions extends WebhookCommonOptions {
  /** The endpoint (URL, secret, headers) of the delivery's target, by the event and its context. */
  readonly target: (
    event: OutboxEvent,
    context: DeliveryContext,
  ) => WebhookTarget | Promise<WebhookTarget>;
  readonly url?: undefined;
  /** Not with `target`: the secret is the target's. */
  readonly secret?: undefined;
}

/** The options of {@link webhook}: `url` (and `secret`) or `target`. */
export type WebhookOptions = WebhookUrlOptions | WebhookTargetOptions;

/** The webhook transport: an `OutboxDelivery` with both sends. */
export interface WebhookDelivery extends OutboxDelivery {
  deliver(event: OutboxEvent, context: DeliveryContext): Promise<void>;
  deliverBatch(
    items: readonly DeliveryItem[],
    options: { readonly signal: AbortSignal },
  ): Promise<readonly DeliveryResult[]>;
  close(): Promise<void>;
}

/** How many bytes of an answer are read before the rest is dropped. */
const READ_LIMIT_BYTES = 16 * 1024;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Every option of {@link webhook}, to refuse a misspelt one. */
const WEBHOOK_OPTIONS = optionNames<WebhookOptions>()([
  'url',
  'secret',
  'target',
  'name',
  'timeoutMs',
  'headers',
  'allowsUrl',
  'allowsAddress',
  'lookup',
  'ca',
  'signatureHeader',
  'onResult',
  'concurrency',
  'now',
  'logger',
]);

/**
 * A transport POSTing each event as signed JSON to a webhook endpoint.
 *
 * @example
 * ```ts
 * receiver('notify.*', {
 *   deliver: webhook({ url: 'https://hooks.example.com/notify', secret: process.env.HOOK_SECRET }),
 * });
 * // one receiver for every subscriber: targets names them, target looks one up
 * receiver('shop.*', {
 *   targets: async (e) => subscriptionIdsFor(e.name),
 *   deliver: webhook({ target: async (e, { target }) => subscription(target) }),
 * });
 * ```
 */
export function webhook(options: WebhookOptions): WebhookDelivery {
  checkOptionNames('webhook', options, WEBHOOK_OPTIONS);
  const settings = resolveOptions(options);
  const undici = loadUndici();
  // Loaded now, awaited at the first request: a missing package fails that attempt
  // with the install hint, and never an unhandled rejection before it.
  undici.catch(() => {});
  let agent: Dispatcher | undefined;
  let closed = false;

  const dispatcher = async (): Promise<Dispatcher> => {
    const u = await undici;
    if (closed) throw new Error(`${settings.name} transport is closed`);
    agent ??= new u.Agent({ connect: pinnedConnector(u, settings) });
    return agent;
  };

  const send = async (item: DeliveryItem, signal: AbortSignal): Promise<DeliveryResult> => {
    const outcome = await sendOne(settings, dispatcher, item, signal);
    if (settings.onResult) {
      try {
        await settings.onResult(outcome.record, item);
      } catch (error) {
        settings.logger.warn(`${settings.name}: onResult failed`, {
          eventId: item.event.id,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
    return outcome.result;
  };

  return {
    name: settings.name,
    async deliver(event, context) {
      const signal = context.signal ?? new AbortController().signal;
      const result = await send({ event, context }, signal);
      if (result.status === 'sent') return;
      if (result.status === 'retryAfter')
        throw new RetryAfter(result.seconds, { message: messageOf(result.error) });
      throw result.error;
    },
    async deliverBatch(items, { signal: attempt }) {
      // One listener on the attempt's signal, however many requests are in flight (each
      // request listens on this one, which has no listener limit); the same reason.
      const linked = new AbortController();
      setMaxListeners(0, linked.signal);
      const { signal } = linked;
      const onAbort = () => linked.abort(attempt.reason);
      if (attempt.aborted) onAbort();
      else attempt.addEventListener('abort', onAbort, { once: true });
      try {
        return await runByKey(
          items,
          settings.concurrency,
          (item) => send(item, signal),
          // A stop ends the held-back items with its own reason, so the relay hands them back.
          (item) =>
            signal.aborted
              ? { status: 'failed', error: signal.reason }
              : {
                  status: 'failed',
                  error: new Error(
                    `not sent: an earlier event of ordering key ${item.event.orderingKey}${item.context.target ? ` for target ${item.context.target}` : ''} failed in this batch`,
                  ),
                },
        );
      } finally {
        attempt.removeEventListener('abort', onAbort);
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      const a = agent;
      agent = undefined;
      await a?.close();
    },
  };
}

type Settings = Required<
  Pick<
    WebhookCommonOptions,
    | 'name'
    | 'timeoutMs'
    | 'headers'
    | 'allowsAddress'
    | 'lookup'
    | 'signatureHeader'
    | 'concurrency'
    | 'now'
    | 'logger'
  >
> &
  Pick<WebhookCommonOptions, 'allowsUrl' | 'onResult' | 'ca'> & {
    readonly target: (
      event: OutboxEvent,
      context: DeliveryContext,
    ) => WebhookTarget | Promise<WebhookTarget>;
  };

function resolveOptions(options: WebhookOptions): Settings {
  const at = (what: string) => `webhook({ ${what} })`;
  if (options === null || typeof options !== 'object')
    throw new ConfigurationError('webhook(options) needs { url, secret? } or { target }');
  const { url, target, secret } = options as {
    url?: unknown;
    target?: unknown;
    secret?: unknown;
  };
  if ((url === undefined) === (target === undefined))
    throw new ConfigurationError(
      `${at('url | target')} needs exactly one of url (one endpoint) and target (a function of the event giving its subscriber's endpoint); got ${url === undefined ? 'neither' : 'both'}`,
    );
  if (target !== undefined && typeof target !== 'function')
    throw new ConfigurationError(
      `${at('target')} must be a function of the event (got ${typeof target})`,
    );
  if (target !== undefined && secret !== undefined)
    throw new ConfigurationError(
      `${at('target, secret')}: with target, the secret is the target's (return { url, secret } from target)`,
    );
  if (secret !== undefined && typeof secret !== 'string' && !(secret instanceof Uint8Array))
    throw new ConfigurationError(`${at('secret')} must be a string or bytes`);
  if (url !== undefined) {
    const problem = targetUrlProblem(url);
    if (problem) throw new ConfigurationError(`${at('url')}: ${problem}`);
  }
  const timeoutMs = options.timeoutMs ?? 10_000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new ConfigurationError(
      `${at('timeoutMs')} must be a number of milliseconds > 0 (got ${timeoutMs})`,
    );
  const concurrency = options.concurrency ?? 4;
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new ConfigurationError(
      `${at('concurrency')} must be an integer ≥ 1 (got ${concurrency})`,
    );
  const signatureHeader = options.signatureHeader ?? DEFAULT_SIGNATURE_HEADER;
  if (!HEADER_NAME.test(signatureHeader))
    throw new ConfigurationError(
      `${at('signatureHeader')} must be a header name (got ${JSON.stringify(signatureHeader)})`,
    );
  for (const fn of ['allowsUrl', 'allowsAddress', 'lookup', 'onResult', 'now'] as const) {
    const value = options[fn];
    if (value !== undefined && typeof value !== 'function')
      throw new ConfigurationError(`${at(fn)} must be a function (got ${typeof value})`);
  }
  const fixed: WebhookTarget = {
    url: url as string | URL,
    secret: secret as string | Uint8Array | undefined,
  };
  return {
    name: options.name ?? 'webhook',
    timeoutMs,
    headers: { ...options.headers },
    allowsUrl: options.allowsUrl,
    allowsAddress: options.allowsAddress ?? isPublicAddress,
    lookup: options.lookup ?? systemLookup,
    ca: options.ca,
    signatureHeader: signatureHeader.toLowerCase(),
    onResult: options.onResult,
    concurrency,
    now: options.now ?? (() => new Date()),
    logger: options.logger ?? consoleLogger,
    target: (target as Settings['target'] | undefined) ?? (() => fixed),
  };
}

/** Why `url` cannot be a webhook's endpoint (not a URL, not http(s)), or undefined. */
function targetUrlProblem(url: unknown): string | undefined {
  if (typeof url !== 'string' && !(url instanceof URL))
    return `the URL must be a string or a URL (got ${typeof url})`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'not a valid URL';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    return `only http: and https: URLs are sent to (got ${parsed.protocol})`;
  return undefined;
}

/**
 * undici's connector, with every connection checked: a URL naming an IP address is
 * checked as it is (Node looks nothing up for it); a name is resolved once by
 * {@link checkedLookup}, which hands the socket only the addresses it checked.
 */
function pinnedConnector(u: Undici, settings: Settings) {
  const base = u.buildConnector({
    lookup: checkedLookup(settings.lookup, settings.allowsAddress),
    ...(settings.ca === undefined ? {} : { ca: settings.ca }),
  } as never);
  return (options: Parameters<typeof base>[0], callback: Parameters<typeof base>[1]): void => {
    const host = bareHost(options.hostname);
    if (!isIPAddress(host)) {
      base(options, callback);
      return;
    }
    Promise.resolve(settings.allowsAddress(host, host)).then(
      (allowed) => {
        if (allowed) base(options, callback);
        else
          callback(
            new WebhookAddressRefused(`${host} was refused by allowsAddress${reasonSuffix(host)}`),
            null,
          );
      },
      (error: unknown) => callback(error instanceof Error ? error : new Error(String(error)), null),
    );
  };
}

function isIPAddress(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':');
}

/** What one request did: the relay's result and the record for `onResult`. */
interface SendOutcome {
  readonly result: DeliveryResult;
  readonly record: WebhookResult;
}

async function sendOne(
  settings: Settings,
  dispatcher: () => Promise<Dispatcher>,
  item: DeliveryItem,
  attemptSignal: AbortSignal,
): Promise<SendOutcome> {
  const { event, context } = item;
  const fail = (
    message: string,
    cause?: unknown,
    statusCode: number | null = null,
    body: string | null = null,
  ) => {
    const error = new DeliveryError(message, {
      deliveryId: context.deliveryId ?? '',
      receiverKey: context.receiverKey,
      cause,
    });
    return {
      result: { status: 'failed', error } as const,
      record: record(statusCode, body, error),
    };
  };
  if (attemptSignal.aborted) return aborted(attemptSignal.reason);
  let target: WebhookTarget;
  let url: URL;
  try {
    target = await settings.target(event, context);
    url = new URL(target.url);
  } catch (error) {
    return fail(
      `${settings.name}: target() gave no usable endpoint for event ${event.id}: ${messageOf(error)}`,
      error,
    );
  }
  const where = `${settings.name} to ${url.origin}`;
  const shape = urlShapeProblem(url);
  if (shape) return fail(`${where} refused: ${shape}`);
  if (settings.allowsUrl) {
    let allowed: boolean;
    try {
      allowed = await settings.allowsUrl(url.href);
    } catch (error) {
      return fail(`${where} refused: allowsUrl threw: ${messageOf(error)}`, error);
    }
    if (!allowed) return fail(`${where} refused by allowsUrl`);
  }

  const body = Buffer.from(getBody(event), 'utf8');
  const headers: Record<string, string> = {};
  const put = (name: string, value: string) => {
    headers[name.toLowerCase()] = headerBytes(value);
  };
  for (const [n, v] of Object.entries(settings.headers)) put(n, v);
  for (const [n, v] of Object.entries(target.headers ?? {})) put(n, v);
  for (const [n, v] of Object.entries(getHeaders(event))) put(n, v);
  if (event.orderingKey !== null) put(ORDERING_KEY_HEADER, event.orderingKey);
  put('content-type', 'application/json');
  if (target.secret !== undefined) put(settings.signatureHeader, signBody(body, target.secret));
  else delete headers[settings.signatureHeader];

  const controller = new AbortController();
  const timeout = new DeliveryError(
    `${where}: no answer within timeoutMs (${settings.timeoutMs} ms)`,
    {
      deliveryId: context.deliveryId ?? '',
      receiverKey: context.receiverKey,
    },
  );
  const timer = setTimeout(() => controller.abort(timeout), settings.timeoutMs);
  const onAbort = () => controller.abort(attemptSignal.reason);
  attemptSignal.addEventListener('abort', onAbort, { once: true });
  try {
    const response = await (await dispatcher()).request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers,
      body,
      signal: controller.signal,
    });
    const text = await readSome(response.body);
    const status = response.statusCode;
    if (status >= 200 && status < 300)
      return { result: { status: 'sent' }, record: record(status, text, null) };
    if (status >= 300 && status < 400)
      return fail(
        `${where} answered ${status}, a redirect, which is never followed (point the webhook at the final URL)`,
        undefined,
        status,
        text,
      );
    if (status === 410) {
      const error = new PermanentFailure(
        `${where} answered 410 Gone: the endpoint takes no more events`,
      );
      return { result: { status: 'failed', error }, record: record(status, text, error) };
    }
    if (status === 429 || status === 503) {
      const seconds = retryAfterSeconds(response.headers['retry-after'], settings.now());
      if (seconds !== undefined) {
        const error = new DeliveryError(
          `${where} answered ${status} with Retry-After ${seconds}s`,
          {
            deliveryId: context.deliveryId ?? '',
            receiverKey: context.receiverKey,
          },
        );
        return {
          result: { status: 'retryAfter', seconds, error },
          record: record(status, text, error),
        };
      }
    }
    return fail(`${where} answered ${status}`, undefined, status, text);
  } catch (error) {
    if (attemptSignal.aborted) return aborted(attemptSignal.reason);
    if (controller.signal.aborted && controller.signal.reason === timeout)
      return { result: { status: 'failed', error: timeout }, record: record(null, null, timeout) };
    const refused = findRefusal(error);
    if (refused) return fail(`${where} refused: ${refused.message}`, refused);
    return fail(`${where} failed: ${messageOf(error)}`, error);
  } finally {
    clearTimeout(timer);
    attemptSignal.removeEventListener('abort', onAbort);
  }
}

/** The attempt's own abort: its reason as the error, so the relay knows a stop from a failure. */
function aborted(reason: unknown): SendOutcome {
  return { result: { status: 'failed', error: reason }, record: record(null, null, reason) };
}

function findRefusal(error: unknown): WebhookAddressRefused | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++)
    if (e instanceof WebhookAddressRefused) return e;
  return undefined;
}

function record(statusCode: number | null, body: string | null, error: unknown): WebhookResult {
  return {
    statusCode,
    body: body === null ? null : cut(body),
    error: error === null || error === undefined ? null : cut(messageOf(error)),
  };
}

/** Cut to the result's length, a NUL written as U+FFFD. */
function cut(text: string): string {
  const clean = text.replaceAll('\u0000', '\uFFFD');
  return clean.length > WEBHOOK_RESULT_MAX_LENGTH
    ? clean.slice(0, WEBHOOK_RESULT_MAX_LENGTH)
    : clean;
}

/** Read up to {@link READ_LIMIT_BYTES} of an answer's body, dropping the rest. */
async function readSome(body: AsyncIterable<Uint8Array> & { destroy(): unknown }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(Buffer.from(chunk));
    size += chunk.length;
    if (size >= READ_LIMIT_BYTES) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, READ_LIMIT_BYTES).toString('utf8');
}

/** A header value as its UTF-8 bytes (undici writes header text as latin1). */
function headerBytes(value: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII is sent as it is
  return /^[\x00-\x7f]*$/.test(value) ? value : Buffer.from(value, 'utf8').toString('latin1');
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Run `send` over the items, `concurrency` at a time, one ordering key's items one after
 * the other in item order (an item without a key goes on its own). Once an item of a
 * key is not sent, the later ones of that key are not tried (they would overtake it) and
 * record `heldBack(item)`. Results in item order.
 *
 * A key is the delivery rows' own: (receiver, target, ordering key), what the claim holds
 * rows back by. So one fan-out target's failure never holds back a sibling target of the
 * same event (or of the same ordering key), which has its own order and its own retries.
 */
export async function runByKey(
  items: readonly DeliveryItem[],
  concurrency: number,
  send: (item: DeliveryItem) => Promise<DeliveryResult>,
  heldBack: (item: DeliveryItem) => DeliveryResult,
): Promise<DeliveryResult[]> {
  const results: DeliveryResult[] = new Array(items.length);
  const groups = new Map<string, number[]>();
  const lanes: number[][] = [];
  items.forEach((item, i) => {
    if (item.event.orderingKey === null) {
      lanes.push([i]);
      return;
    }
    const key = orderOf(item);
    let group = groups.get(key);
    if (!group) {
      group = [];
      groups.set(key, group);
      lanes.push(group);
    }
    group.push(i);
  });
  let next = 0;
  const worker = async () => {
    while (next < lanes.length) {
      const lane = lanes[next++];
      let blocked: DeliveryResult | undefined;
      for (const i of lane) {
        if (blocked) {
          results[i] = heldBack(items[i]);
          continue;
        }
        results[i] = await send(items[i]);
        if (results[i].status !== 'sent') blocked = results[i];
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, lanes.length) }, worker));
  return results;
}

/** The order an item keeps: its receiver, target and ordering key, as one map key. */
function orderOf({ event, context }: DeliveryItem): string {
  return JSON.stringify([context.receiverKey, context.target, event.orderingKey]);
}
