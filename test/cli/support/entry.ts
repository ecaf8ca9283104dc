/**
 * The `outbox` command run from source, for the CLI end-to-end tests: what `bin/outbox.js`
 * does with the compiled CLI, without needing `npm run build` first (and without racing
 * another build writing dist/). Spawned as `node --import tsx test/cli/support/entry.ts …`.
 */
import { main } from '../../../src/cli/main.js';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  },
);
