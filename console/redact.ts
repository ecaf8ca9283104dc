/**
 * What the console never shows: a transport's secrets. The console renders no transport
 * object at all (the catalogue names a transport, nothing of its config), but an error a
 * transport recorded may quote its endpoint — `connect ECONNREFUSED
 * https://user:s3cret@hooks.example.com/…` — and an event's headers may carry a
 * credential a producer put there. Both are redacted before they are escaped and shown.
 */

/** `scheme://user:password@host` → `scheme://***@host`. */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+(?::[^\s/@]*)?@/gi;
/**
 * `?token=…`, `&password=…`, `secret=…`, `"api_key": "…"` → the value replaced (a bare
 * `token: …` is prose as often as a credential, and is left).
 */
const SECRET_PARAMS =
  /\b(password|passwd|pwd|secret|token|api[-_]?key|access[-_]?key|signature|sig|authorization)(\s*=\s*|["']\s*:\s*["']?)(?:Bearer\s+|Basic\s+)?[^\s&"',;}]+/gi;

/** `text` with URL credentials and secret-looking parameters replaced by `***`. */
export function redactSecrets(text: string): string {
  return text.replace(URL_CREDENTIALS, '$1***@').replace(SECRET_PARAMS, '$1$2***');
}

/** Header names whose values are credentials, never shown. */
const SECRET_HEADER = /authorization|cookie|secret|token|password|api[-_]?key|signature/i;

/** Whether a header of this name carries a credential (its value is shown as `***`). */
export function isSecretHeader(name: string): boolean {
  return SECRET_HEADER.test(name);
}
