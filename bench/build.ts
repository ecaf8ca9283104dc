/**
 * The benchmark's child processes (the relay, the bare loops, the producers) run compiled
 * by tsc, as the package ships (`dist/`), not through tsx. tsx's esbuild transform keeps
 * function names by wrapping every closure it creates in a `__name(fn, "…")` call, which
 * redefines the function's `name` on every creation: on the relay's hot path that was
 * ~600 B of garbage per event and its CPU (bench/experiments/transport-cpu.ts
 * `--heap-profile`), a cost no user of the built package pays. The bare loops and the
 * producers are compiled the same way, so every system's child runs what tsc emits. The
 * peers' worker (bench/peers/worker.ts) stays on tsx: its packages are bench/peers' own,
 * already JavaScript, and outside this build.
 *
 * `buildChildren()` compiles `tsconfig.bench.json` into `.bench-build/` (incremental:
 * seconds once built) before anything is forked; `compiledScript()` maps a child's .ts to
 * what was built. `OUTBOX_BENCH_CHILDREN=tsx` runs every child on tsx instead (how the
 * figures before 2026-12-03 afternoon were taken), for an A/B of the two.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { note } from './common.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = resolve(ROOT, '.bench-build');
/** Set once this process (or the one that started it) compiled the children. */
const BUILT = 'OUTBOX_BENCH_CHILDREN_BUILT';

/** Compile the child processes' code (tsconfig.bench.json) unless it was this run. */
export function buildChildren(): void {
  if (process.env[BUILT] === '1' || onTsx()) return;
  note('bench: compiling the child processes with tsc (tsconfig.bench.json → .bench-build/) …');
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', resolve(ROOT, 'tsconfig.bench.json')], {
    cwd: ROOT,
    stdio: ['ignore', 2, 2],
  });
  process.env[BUILT] = '1';
}

/**
 * The compiled form of `script` (a .ts file of this repository) when {@link buildChildren}
 * built it in this run, else undefined (the caller runs the source through tsx).
 */
export function compiledScript(script: string): string | undefined {
  if (process.env[BUILT] !== '1' || onTsx()) return undefined;
  const js = resolve(OUT, relative(ROOT, script)).replace(/\.ts$/, '.js');
  return existsSync(js) ? js : undefined;
}

/**
 * How to fork `script` (a .ts file of this repository): what tsc built of it when this run
 * built it ({@link compiledScript}), else the source through tsx. Every child the bench
 * forks from its own code goes through here, so they all run the same way.
 */
export function childEntry(script: string): { readonly path: string; readonly execArgv: string[] } {
  const compiled = compiledScript(script);
  return compiled
    ? { path: compiled, execArgv: [] }
    : { path: script, execArgv: ['--import', 'tsx'] };
}

function onTsx(): boolean {
  return process.env.OUTBOX_BENCH_CHILDREN === 'tsx';
}
