import type { Outbox, OutboxWakeup } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';

/** A wakeup that records what it was asked to signal (and signals after commit). */
export function recordingWakeup(name = 'recording'): OutboxWakeup & { signals: string[][] } {
  const signals: string[][] = [];
  return {
    name,
    capabilities: {},
    signals,
    signal: (topics) => void signals.push([...topics]),
    listen: async () => async () => {},
    close: async () => {},
  };
}

/** How many events the outbox's log holds. */
export async function eventCount(outbox: Outbox): Promise<number> {
  return (await runtimeOf(outbox).store.readEvents({})).length;
}
