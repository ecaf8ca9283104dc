import { createHmac } from 'node:crypto';

/** The header a webhook's signature goes in unless `signatureHeader` names another. */
export const DEFAULT_SIGNATURE_HEADER = 'outbox-signature';

/**
 * The signature of a webhook body: `sha256=` and the hex HMAC-SHA256 of the exact bytes
 * sent, keyed with the secret. What a receiver recomputes (over the raw body, before any
 * JSON parsing) and compares in constant time to know the request came from us unchanged.
 */
export function signBody(body: Uint8Array | string, secret: string | Uint8Array): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}
