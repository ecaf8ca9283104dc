/**
 * The seconds a `Retry-After` header asks for: delta-seconds (`120`) or an HTTP date
 * (`Wed, 21 Oct 2015 07:28:00 GMT`, counted from `now`, never below zero), or undefined
 * for a missing or unreadable header (then the answer is an ordinary failure, retried on
 * the backoff curve).
 */
export function retryAfterSeconds(
  header: string | readonly string[] | undefined,
  now: Date,
): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now.getTime()) / 1000));
}
