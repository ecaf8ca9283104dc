// `import('outboxkit')` in a fresh process, then print every module that was loaded.
// ESM files are seen by a resolve hook (trace-hooks.mjs, registered before the import);
// CommonJS files, including those a CommonJS package require()s internally (which no ESM
// hook sees on Node 20), are the keys of the shared require.cache.
import { readFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';

const log = process.argv[3];
register('./trace-hooks.mjs', import.meta.url, { data: { log } });
await import(process.argv[2]);
const esm = readFileSync(log, 'utf8').split('\n').filter(Boolean);
const cjs = Object.keys(createRequire(import.meta.url).cache);
console.log(JSON.stringify({ esm, cjs }));
