/**
 * The write-cost figure's transactions in a process of their own, on tsc's build (see
 * write-cost.ts `benchWriteCost`). argv[2] is the {@link WriteCostOptions} JSON; the
 * figure goes back to the parent as one `{ figure }` message.
 */
import { measureWriteCost, type WriteCostOptions } from './write-cost.js';

const options = JSON.parse(process.argv[2] ?? '{}') as WriteCostOptions;
const figure = await measureWriteCost(options);
process.send?.({ figure });
process.disconnect?.();
