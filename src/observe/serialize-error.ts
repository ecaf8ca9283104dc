/**
 * An error as a log writes it: plain data, safe to `JSON.stringify`. `stack` only when the
 * logger asked for stacks (its level is `debug`); `cause` follows `error.cause`, or a
 * Sequelize error's `parent` when that says something the error itself does not.
 */
export interface SerializedError {
  readonly name: string;
  readonly message: string;
  /** `error.code`, or the code of the driver error a Sequelize error wraps (`ECONNREFUSED`, `57P01`). */
  readonly code?: string | number;
  readonly cause?: SerializedError | string;
  /** The errors of an `AggregateError` (what `net` raises when every address refused). */
  readonly errors?: readonly SerializedError[];
  readonly stack?: string;
}

/** How deep a cause chain (or an AggregateError's errors) is followed. */
const MAX_DEPTH = 3;

/** Whether a value looks like an error: an `Error`, or an object with a string `message` and `name`. */
export function isErrorLike(value: unknown): value is Error {
  if (value instanceof Error) return true;
  if (typeof value !== 'object' || value === null) return false;
  const v = value as { message?: unknown; name?: unknown; stack?: unknown };
  return typeof v.message === 'string' && typeof v.name === 'string' && typeof v.stack === 'string';
}

/** The error a Sequelize error wraps, or an error's `cause`, whichever it has. */
function underlying(error: Error): unknown {
  if (error.cause !== undefined) return error.cause;
  const e = error as { parent?: unknown; original?: unknown };
  return e.parent ?? e.original;
}

function codeOf(error: unknown): string | number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' || typeof code === 'number' ? code : undefined;
}

/** Serialize an error (and its cause chain) for a log entry. */
export function serializeError(
  error: Error,
  options: { stacks?: boolean } = {},
  depth = 0,
): SerializedError {
  const stacks = options.stacks ?? false;
  const inner = underlying(error);
  // A Sequelize error repeats its driver error's message: keep the code, drop the echo.
  const echo = isErrorLike(inner) && inner.message === error.message && inner.cause === undefined;
  const code = codeOf(error) ?? (isErrorLike(inner) ? codeOf(inner) : undefined);
  const aggregate = (error as { errors?: unknown }).errors;
  let message = error.message;
  let errors: SerializedError[] | undefined;
  if (Array.isArray(aggregate) && aggregate.length > 0 && depth < MAX_DEPTH) {
    errors = aggregate.filter(isErrorLike).map((e) => serializeError(e, options, depth + 1));
    if (message === '') message = errors.map((e) => e.message).join('; ');
  }
  let cause: SerializedError | string | undefined;
  if (inner !== undefined && !echo && depth < MAX_DEPTH) {
    cause = isErrorLike(inner) ? serializeError(inner, options, depth + 1) : String(inner);
  }
  return {
    name: error.name || 'Error',
    message,
    ...(code === undefined ? {} : { code }),
    ...(cause === undefined ? {} : { cause }),
    ...(errors === undefined || errors.length === 0 ? {} : { errors }),
    ...(stacks && error.stack ? { stack: error.stack } : {}),
  };
}

/**
 * One line for a person: `Name: message [code] (cause: Name: message)`. With
 * `omitMessage`, the message is left out (the log line already says it: a DeliveryError
 * whose message is the line's).
 */
export function errorSummary(error: SerializedError, omitMessage = false): string {
  let text = omitMessage || error.message === '' ? error.name : `${error.name}: ${error.message}`;
  if (error.code !== undefined && !error.message.includes(String(error.code)))
    text += ` [${error.code}]`;
  if (error.cause !== undefined) {
    text += ` (cause: ${typeof error.cause === 'string' ? error.cause : errorSummary(error.cause)})`;
  }
  return text;
}
