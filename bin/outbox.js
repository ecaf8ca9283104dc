#!/usr/bin/env node
// The `outbox` command. The CLI itself is compiled to dist/ before the package is packed
// (prepack; in the repo, `npm run build`). A TypeScript config (outbox.config.ts) loads
// through tsx, an optional peer; a .js/.mjs one needs nothing more. `run` exits the
// process with the command's code as soon as the command has closed what it opened.
import { run } from '../dist/cli/main.js';

run(process.argv);
