import { timingSafeEqual } from 'node:crypto';
import { signBody } from '../transports/webhook/signature.js';

/**
 * Whether `header` is the signature our `webhook()` transport puts on `body` with `secret`
 * (`sha256=<hex HMAC-SHA256 of the body>`, in the `outbox-signature` header by default):
 * the request came from a holder of the secret, unchanged.
 *
 * Pass the RAW body, the exact bytes received, before any JSON parsing: a parsed and
 * re-serialised body differs in spacing and key order and never matches. The comparison
 * takes the same time however much of it matches (`timingSafeEqual`), so an attacker
 * cannot find the signature a byte at a time from response times. A missing or repeated
 * header is `false`.
 */
export function verifyWebhookSignature(
  body: Uint8Array | string,
  header: string | readonly string[] | null | undefined,
  secret: string | Uint8Array,
): boolean {
  if (typeof header !== 'string') {
    if (!Array.isArray(header) || header.length !== 1) return false;
    return verifyWebhookSignature(body, header[0], secret);
  }
  const expected = Buffer.from(signBody(body, secret), 'utf8');
  const got = Buffer.from(header.trim(), 'utf8');
  return got.length === expected.length && timingSafeEqual(got, expected);
}
