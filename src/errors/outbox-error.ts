/**
 * Every code an {@link OutboxError} can carry: one union, so a `switch` over `error.code`
 * is checked for exhaustiveness and a new code is a visible API change.
 *
 * - `OUTBOX_CONFIGURATION`: the config or an option is wrong ({@link ConfigurationError}).
 * - `OUTBOX_VALIDATION`: an argument is wrong and nothing was written ({@link ValidationError}).
 * - `OUTBOX_DELIVERY`: a receiver's attempt failed ({@link DeliveryError}).
 * - `OUTBOX_DELIVERY_TIMEOUT`: an attempt outran its time limit ({@link DeliveryTimeout}).
 * - `OUTBOX_PAYLOAD_DECODE`: a stored event no longer decodes ({@link PayloadDecodeError}).
 * - `OUTBOX_PAYLOAD_UPGRADE`: an event's `upgrade` hook threw on an older row
 *   ({@link PayloadUpgradeFailed}).
 */
export type OutboxErrorCode =
  | 'OUTBOX_CONFIGURATION'
  | 'OUTBOX_VALIDATION'
  | 'OUTBOX_DELIVERY'
  | 'OUTBOX_DELIVERY_TIMEOUT'
  | 'OUTBOX_PAYLOAD_DECODE'
  | 'OUTBOX_PAYLOAD_UPGRADE';

/**
 * The root of every error outboxkit raises on purpose.
 *
 * Match on `code` or `instanceof`, never on message text: messages are written for the
 * person reading a log and are free to improve; codes are part of the API. `retriable`
 * says whether doing the same thing again may succeed (kafkajs' `KafkaJSError`): a
 * timed-out delivery may, a payload its schema refuses never will.
 */
export class OutboxError extends Error {
  /** A stable, machine-readable identifier of the failure. */
  readonly code: OutboxErrorCode;
  /** Whether the same call may succeed if tried again unchanged. */
  readonly retriable: boolean;

  constructor(
    message: string,
    options: { code: OutboxErrorCode; retriable?: boolean; cause?: unknown },
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code;
    this.retriable = options.retriable ?? false;
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
 * A delivery failed. Wraps whatever the receiver threw (`cause`), so logs, observers and
 * `relay:error` listeners get one type with the delivery's identity attached.
 */
export class DeliveryError extends OutboxError {
  /** The delivery row's id. */
  readonly deliveryId: string;
  /** The key of the receiver that failed. */
  readonly receiverKey: string;

  constructor(
    message: string,
    options: {
      deliveryId: string;
      receiverKey: string;
      cause?: unknown;
      retriable?: boolean;
      code?: Extract<OutboxErrorCode, 'OUTBOX_DELIVERY' | 'OUTBOX_DELIVERY_TIMEOUT'>;
    },
  ) {
    super(message, {
      code: options.code ?? 'OUTBOX_DELIVERY',
      cause: options.cause,
      retriable: options.retriable ?? true,
    });
    this.deliveryId = options.deliveryId;
    this.receiverKey = options.receiverKey;
  }
}

/**
 * An attempt outran its time limit (`timeoutSeconds` of the receiver, else
 * `settings.deliveryTimeoutSeconds`). The attempt's `AbortSignal` fires with this error as
 * its reason, so a handler stops querying its rolled-back transaction and a transport
 * cancels the send rather than only losing the race. Counted as an ordinary failure.
 */
export class DeliveryTimeout extends DeliveryError {
  /** The limit that was exceeded, in seconds. */
  readonly timeoutSeconds: number;

  constructor(options: { deliveryId: string; receiverKey: string; timeoutSeconds: number }) {
    super(`receiver ${options.receiverKey} timed out after ${options.timeoutSeconds}s`, {
      ...options,
      code: 'OUTBOX_DELIVERY_TIMEOUT',
      retriable: true,
    });
    this.timeoutSeconds = options.timeoutSeconds;
  }
}

/**
 * A stored event cannot be decoded into its declared payload: its JSON does not parse, or
 * the event's schema (at the event's version) refuses it. Raised by the ONE decoder the
 * relay, `fire()`'s idempotent re-read and `assertFired` share, so the three fail the same
 * way; it is where upgrading older versions (`upgrade`) will land. Not retriable: the row
 * will not decode better next time (a deploy that fixes the schema will).
 */
export class PayloadDecodeError extends OutboxError {
  /** The event's name. */
  readonly eventName: string;
  /** The version the payload was written with. */
  readonly version: number;
  /** The event's UUID. */
  readonly eventId: string;
  /** Where in the payload decoding failed, e.g. `payload.items[0].sku`. */
  readonly path: string;

  constructor(
    message: string,
    options: { eventName: string; version: number; eventId: string; path: string; cause?: unknown },
  ) {
    super(message, { code: 'OUTBOX_PAYLOAD_DECODE', cause: options.cause });
    this.eventName = options.eventName;
    this.version = options.version;
    this.eventId = options.eventId;
    this.path = options.path;
  }
}

/**
 * An event's `upgrade` hook threw (or answered with a promise) while bringing a row stored
 * under an older version to the current one.
 *
 * Its own type, and not a {@link PayloadDecodeError}, because an operator reading
 * `last_error` needs to know that the hook ran and what it said, not that something
 * unspecified went wrong between the row and the receiver. The relay dead-letters the row
 * at once, as it does a `PermanentFailure`: the hook is code, and the same row through the
 * same code fails the same way on every retry; a deploy that fixes the hook and a
 * `requeueDead` bring it back. Raised by the ONE decoder, so `fire()`'s idempotent re-read
 * and `assertFired` raise it too. The hook's own error is the `cause`.
 */
export class PayloadUpgradeFailed extends OutboxError {
  /** The event's name. */
  readonly eventName: string;
  /** The version the row was written with. */
  readonly fromVersion: number;
  /** The version the event is declared with now, which the hook was to bring it to. */
  readonly toVersion: number;
  /** The event's UUID. */
  readonly eventId: string;

  constructor(options: {
    eventName: string;
    fromVersion: number;
    toVersion: number;
    eventId: string;
    /** What the hook said: its error's message, or why its answer was refused. */
    reason: string;
    cause?: unknown;
  }) {
    super(
      `upgrade of ${options.eventName} from v${options.fromVersion} to v${options.toVersion} failed for event ${options.eventId}: ${options.reason}`,
      { code: 'OUTBOX_PAYLOAD_UPGRADE', cause: options.cause },
    );
    this.eventName = options.eventName;
    this.fromVersion = options.fromVersion;
    this.toVersion = options.toVersion;
    this.eventId = options.eventId;
  }
}
