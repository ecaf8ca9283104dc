import { decodeJson } from '../src/codec/json.js';
import type { Outbox } from '../src/index.js';
import { runtimeOf } from '../src/runtime.js';

/** Thrown by {@link assertFired} when the log does not hold what the test expected. */
export class OutboxAssertionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutboxAssertionError';
  }
}

/**
 * Assert an event was fired (and committed), and return the decoded payloads, oldest first.
 *
 * Reads the log rather than spying on `fire()`: a spy records that a function was called,
 * while the committed row is what the rest of the system reacts to — a rolled-back fire
 * leaves no row and fails this. Decoding through the event's schema on the way out means
 * a payload that cannot round-trip fails here too.
 *
 * @param times the exact number of events expected; at least one when omitted.
 */
export async function assertFired<P = unknown>(
  outbox: Outbox,
  name: string,
  options: { times?: number } = {},
): Promise<P[]> {
  const rt = runtimeOf(outbox);
  const route = rt.config.route(name);
  if (!route) throw new OutboxAssertionError(`assertFired: "${name}" is not a declared event`);
  const rows = await rt.store.readEvents({ name });
  const payloads = rows.map((row) => {
    const parsed = route.event.schema.safeParse(decodeJson(row.payload));
    if (!parsed.success) {
      throw new OutboxAssertionError(
        `assertFired: ${name} event ${row.uuid} does not decode: ${parsed.error.message}`,
      );
    }
    return parsed.data as P;
  });
  if (options.times === undefined ? payloads.length === 0 : payloads.length !== options.times) {
    const fired = await rt.store.readEvents({});
    const names = [...new Set(fired.map((e) => e.name))];
    throw new OutboxAssertionError(
      `assertFired: expected ${options.times === undefined ? 'at least one' : options.times} ${name} event(s), found ${payloads.length}` +
        (names.length ? `; the log holds: ${names.join(', ')}` : '; the log is empty'),
    );
  }
  return payloads;
}
