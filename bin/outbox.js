#!/usr/bin/env node
// The `outbox` command. The CLI itself is compiled to dist/ by `npm install` (prepare);
// outbox.config.ts is TypeScript, which the CLI loads through tsx. `run` exits the
// process with the command's code as soon as the command has closed what it opened.
import { run } from '../dist/cli/main.js';

run(process.argv);
