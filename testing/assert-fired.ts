import { decodeEvent } from '../src/codec/decode-event.js';
import type { CaptureOperation } from '../src/declare/capture.js';
import { closestName } from '../src/declare/config-path.js';
import type { EventColumnValue } from '../src/declare/event-columns.js';
import { PayloadDecodeError, PayloadUpgradeFailed } from '../src/errors/outbox-error.js';
import type { Outbox, OutboxConfig } from '../src/index.js';
import { columnsOption, ofColumns } from '../src/ops/arguments.js';
import type { EventName, Output } from '../src/outbox.js';
import { runtimeOf } from '../src/runtime.js';

/** How many payloads a failed assertion shows, and how much of each. */
const MAX_SHOWN = 5;
const MAX_PAYLOAD_TEXT = 120;

const truncate = (text: string) =>
  text.length > MAX_PAYLOAD_TEXT ? `${text.slice(0, MAX_PAYLOAD_TEXT - 1)}…` : text;

/** Thrown by {@link assertFired} when the log does not hold what the test expected. */
export class OutboxAssertionError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'OutboxAssertionError';
  }
}

/**
 * The name of a captured topic as its template writes it: `{app}.{model}.{operation}` by
 * default, ending in the operation whatever the template (`shop.order.inserted`).
 */
export type CapturedTopicName = `${string}.${CaptureOperation}`;

/**
 * A captured event's payload, the change envelope, as every captured topic carries it
 * (`before`/`after` in their JSON form: DECIMAL and BIGINT as text, dates as ISO strings).
 * Codegen writes a precise one per topic, with the model's row type.
 */
export interface CapturedEnvelope {
  /** The model's label, `{app}.{ModelName}` (`shop.Order`). */
  readonly model: string;
  readonly operation: CaptureOperation;
  /** The key: its value, or an object of its fields for a composite key. */
  readonly pk: unknown;
  /** The fields the caller set; null when not known and for inserts and deletes. */
  readonly changed: string[] | null;
  readonly before?: Record<string, unknown> | null;
  readonly after?: Record<string, unknown> | null;
  /** When the change was written, ISO 8601. */
  readonly occurred_at: string;
  /** What an `extend` function added. */
  readonly [extension: string]: unknown;
}

/** Options of {@link assertFired}. */
export interface AssertFiredOptions {
  /**
   * The exact number of events expected (0 asserts that none was fired).
   * @defaultValue at least one
   */
  readonly times?: number;
  /**
   * Count only the events whose own columns (`defineOutbox({ eventColumns })`) hold these
   * values (`{ order_id: 42 }`; every one named must match, `null` for none), checked as
   * `fire(…, { columns })` checks them. @defaultValue every event of the name
   */
  readonly columns?: Readonly<Record<string, EventColumnValue>>;
}

/**
 * Assert an event was fired (and committed), and return the decoded payloads, oldest first.
 *
 * Typed by the outbox's config, like `fire()`: `name` must be a declared event name (a
 * misspelt one does not compile) and the payloads come back as the event's schema outputs
 * them (`z.output`), as receivers see them. An outbox typed only as `Outbox` accepts any
 * name and returns `unknown[]`; the name is checked at run time either way.
 *
 * Reads the log rather than spying on `fire()`: a spy records that a function was called,
 * while the committed row is what the rest of the system reacts to — a rolled-back fire
 * leaves no row and fails this. Decoding through the event's schema on the way out means
 * a payload that cannot round-trip fails here too — through THE decoder the relay uses, so
 * it fails here exactly when a receiver would (the `PayloadDecodeError` is the `cause`).
 *
 * @example
 * ```ts
 * const [captured] = await assertFired(outbox, 'payments.PaymentCaptured', { times: 1 });
 * expect(captured.amountCents).toBe(2_400); // a number: the schema's output type
 * ```
 * @throws {OutboxAssertionError} when the log holds another number of such events, when one
 * does not decode, or for a name the config does not declare.
 * @throws {TypeError} for a `times` that is not an integer ≥ 0.
 */
export async function assertFired<C extends OutboxConfig, N extends EventName<C>>(
  outbox: Outbox<C>,
  name: N,
  options?: AssertFiredOptions,
): Promise<Output<C, N>[]>;
/**
 * Assert a captured topic's event was fired, and return its envelopes, oldest first.
 *
 * A captured topic (`capture(Order, { app: 'shop' })` declares `shop.order.inserted`, …)
 * is declared at run time from the model, so the config's type does not know its name:
 * any name ending in a capture operation is accepted here, and checked at run time like
 * any other. The envelope is typed as {@link CapturedEnvelope}; pass the payload type
 * codegen writes for the topic for its row type (`EventPayloads['shop.order.inserted']`
 * of `outbox.generated.ts`, or `OrderInsertedPayload`).
 *
 * @example
 * ```ts
 * import type { EventPayloads } from './outbox.generated.js';
 * const [inserted] = await assertFired<EventPayloads['shop.order.inserted']>(outbox, 'shop.order.inserted');
 * expect(inserted.after?.status).toBe('placed');
 * ```
 */
export async function assertFired<P = CapturedEnvelope>(
  outbox: Outbox,
  name: CapturedTopicName,
  options?: AssertFiredOptions,
): Promise<P[]>;
export async function assertFired(
  outbox: Outbox,
  name: string,
  options: AssertFiredOptions = {},
): Promise<unknown[]> {
  if (
    options.times !== undefined &&
    (!Number.isInteger(options.times) || (options.times as number) < 0)
  ) {
    throw new TypeError(`assertFired({ times }) must be an integer ≥ 0 (got ${options.times})`);
  }
  const rt = runtimeOf(outbox);
  const route = rt.config.route(name);
  if (!route) {
    const hint = closestName(
      name,
      rt.config.eventList.map((e) => e.name),
    );
    throw new OutboxAssertionError(
      `assertFired: "${name}" is not a declared event${hint ? ` — did you mean "${hint}"?` : ''}`,
    );
  }
  const rows = await ofColumns(
    rt,
    await rt.store.readEvents({ name }),
    columnsOption(rt.config, options.columns, 'assertFired'),
  );
  const payloads = rows.map((row) => {
    try {
      return decodeEvent(rt.config, row).payload;
    } catch (error) {
      if (!(error instanceof PayloadDecodeError || error instanceof PayloadUpgradeFailed))
        throw error;
      throw new OutboxAssertionError(
        `assertFired: ${name} event ${row.uuid} does not decode: ${error.message}`,
        { cause: error },
      );
    }
  });
  if (options.times === undefined ? payloads.length === 0 : payloads.length !== options.times) {
    const fired = await rt.store.readEvents({});
    const counts = new Map<string, number>();
    for (const e of fired) counts.set(e.name, (counts.get(e.name) ?? 0) + 1);
    const holds = [...counts].map(([n, c]) => `${c} × ${n}`).join(', ');
    // The decoded payloads, in the schema's key order (JSONB keeps its own order).
    const shown = payloads.slice(0, MAX_SHOWN).map((p) => truncate(JSON.stringify(p)));
    const found =
      payloads.length === 0
        ? 'found none'
        : `found ${payloads.length}: ${shown.join(', ')}${rows.length > MAX_SHOWN ? ', …' : ''}`;
    throw new OutboxAssertionError(
      `assertFired: expected ${options.times === undefined ? 'at least one' : options.times} ${name} event(s), ${found}` +
        (counts.size ? `; the log holds: ${holds}` : '; the log is empty') +
        (payloads.length === 0 ? ' (a fire rolled back with its transaction leaves no event)' : ''),
    );
  }
  return payloads;
}
