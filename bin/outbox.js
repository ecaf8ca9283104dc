#!/usr/bin/env node
// The `outbox` command. The CLI itself is compiled to dist/ by `npm install` (prepare);
// outbox.config.ts is TypeScript, which the CLI loads through tsx.
import { main } from '../dist/src/cli/main.js';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  },
);
