import { ValidationError } from '../errors/outbox-error.js';
import { EVENT_ID_HEADER, TOPIC_HEADER } from '../transports/message.js';
import { DEFAULT_SIGNATURE_HEADER } from '../transports/webhook/signature.js';
import { type HeaderValue, headerText } from './header-value.js';
import { checkMessage, type InboxMessage } from './message.js';
import { headerNames, missingEventId } from './missing-id.js';
import { verifyWebhookSignature } from './verify-signature.js';

/**
 * A webhook request's headers: Node's `IncomingHttpHeaders` (`req.headers`, Express,
 * Fastify), a plain object, or a Fetch `Headers` (`request.headers` in a Fetch handler).
 */
export type WebhookHeadersLike =
  | Readonly<Record<string, HeaderValue>>
  | {
      /** A header by its name, or null when absent (a Fetch `Headers`). */
      get(name: string): string | null;
    };

/** Options of {@link fromWebhook}. */
export interface FromWebhookOptions {
  /**
   * The webhook's secret: given, the signature header is checked against the raw `body`
   * first ({@link verifyWebhookSignature}), and a request it does not match is refused.
   * @defaultValue none (no check: verify it yourself, or trust the network)
   */
  readonly secret?: string | Uint8Array;
  /**
   * The header the signature is in, as the `webhook()` transport's `signatureHeader`.
   * @defaultValue `'outbox-signature'`
   */
  readonly signatureHeader?: string;
}

/**
 * The inbox message of a request our `webhook()` transport made: the event id from its
 * `outbox-event-id` header, the topic from `outbox-topic`. With `options.secret`, the
 * signature is checked first, over the raw `body`.
 *
 * ```ts
 * app.post('/hooks/orders', express.raw({ type: 'application/json' }), async (req, res) => {
 *   const message = fromWebhook(req.headers, req.body, { secret: process.env.HOOK_SECRET });
 *   const result = await orders.handle(message, (transaction) => …);
 *   res.status(200).json({ status: result.status }); // a duplicate is a success too
 * });
 * ```
 * @throws {ValidationError} for a request without the header, or (with `secret`) whose
 *   signature is missing or does not match: its `path` is `headers.<signature header>`, so
 *   a handler can answer 401 to that and 400 to the rest.
 */
export function fromWebhook(
  headers: WebhookHeadersLike,
  body?: Uint8Array | string | null,
  options: FromWebhookOptions = {},
): InboxMessage {
  const where = 'fromWebhook(headers, body)';
  const read = (name: string): string | undefined => {
    if (headers && typeof (headers as { get?: unknown }).get === 'function') {
      const v = (headers as { get(name: string): string | null }).get(name);
      return v === null || v === '' ? undefined : v;
    }
    return headerText(where, headers as Readonly<Record<string, HeaderValue>>, name);
  };
  if (options.secret !== undefined) {
    const name = (options.signatureHeader ?? DEFAULT_SIGNATURE_HEADER).toLowerCase();
    const signature = read(name);
    if (body === undefined || body === null) {
      throw new ValidationError(
        `${where}: checking the signature needs the raw body (the exact bytes received); got none`,
        { path: 'body' },
      );
    }
    if (signature === undefined || !verifyWebhookSignature(body, signature, options.secret)) {
      throw new ValidationError(
        `${where}: ${signature === undefined ? `the request has no ${name} header` : `the ${name} header does not match the body`}; refused as not signed with the webhook's secret (check the secret, and that the body is the raw bytes, not re-serialised JSON)`,
        { path: `headers.${name}` },
      );
    }
  }
  const id = read(EVENT_ID_HEADER);
  if (id === undefined) {
    const names =
      headers && typeof (headers as { get?: unknown }).get === 'function'
        ? 'the Headers given'
        : headerNames(headers as Readonly<Record<string, unknown>>);
    throw missingEventId(where, names);
  }
  return checkMessage(where, { id, topic: read(TOPIC_HEADER) ?? null });
}
