/**
 * The `outbox` command run from source, for the CLI end-to-end tests: what `bin/outbox.js`
 * does with the compiled CLI, without needing `npm run build` first (and without racing
 * another build writing dist/). Spawned as `node --import tsx test/cli/support/entry.ts …`.
 */
import { run } from '../../../cli/main.js';

void run(process.argv);
