/**
 * The root of every error outboxkit raises on purpose.
 *
 * Match on `code` or `instanceof`, never on message text: messages are written for the
 * person reading a log and are free to improve; codes are part of the API.
 */
export class OutboxError extends Error {
  /** A stable, machine-readable identifier of the failure. */
  readonly code: string;

  constructor(message: string, options: { code: string; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code;
  }
}

/**
 * The configuration (`defineOutbox`, `createOutbox`, a relay's options) is wrong.
 *
 * Raised at declaration or start-up time, before anything is written, so a mistake in
 * `outbox.config.ts` fails the deploy rather than the first event hours later. The message
 * names the config path and how to fix it.
 */
export class ConfigurationError extends OutboxError {
  /** Where in the configuration the problem is, e.g. `receivers["mail.send"].maxAttempts`. */
  readonly path: string | undefined;

  constructor(message: string, options: { path?: string; cause?: unknown } = {}) {
    super(message, { code: 'OUTBOX_CONFIGURATION', cause: options.cause });
    this.path = options.path;
  }
}

/**
 * An argument of a call (a payload, headers, an option) is wrong, and nothing was written.
 *
 * `fire()` checks everything before its first statement, so this error never leaves a
 * half-written event behind and never aborts the caller's transaction on its own.
 */
export class ValidationError extends OutboxError {
  /** The path inside the payload or options at fault, e.g. `payload.items[0].price`. */
  readonly path: string | undefined;

  constructor(message: string, options: { path?: string; cause?: unknown } = {}) {
    super(message, { code: 'OUTBOX_VALIDATION', cause: options.cause });
    this.path = options.path;
  }
}

/**
 * A delivery failed. Wraps whatever the receiver threw (`cause`), so logs and observers
 * get one type with the delivery's identity attached.
 */
export class DeliveryError extends OutboxError {
  /** The delivery row's id. */
  readonly deliveryId: string;
  /** The key of the receiver that failed. */
  readonly receiverKey: string;

  constructor(
    message: string,
    options: { deliveryId: string; receiverKey: string; cause?: unknown },
  ) {
    super(message, { code: 'OUTBOX_DELIVERY', cause: options.cause });
    this.deliveryId = options.deliveryId;
    this.receiverKey = options.receiverKey;
  }
}
