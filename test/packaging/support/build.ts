/**
 * The package built once per content, for the tests that need it built: the installed
 * `outbox` bin (test/codegen/cli-e2e.test.ts) and the packed tarball (tarball.test.ts).
 *
 * A build is named by the hash of what it is compiled from ({@link sourcesHash}): the files
 * tsconfig.build.json compiles, the tsconfigs, package.json (its `type` decides each file's
 * module format), package-lock.json (the dependencies' types reach the .d.ts files) and
 * TypeScript's version. `npm run build` records that hash for the repo's dist/ (its
 * prebuild and postbuild run `tsx test/packaging/support/build.ts begin|end`), so in CI the
 * build `npm ci` made (prepare) is the one every test reuses: the package is compiled once
 * per CI run. Anywhere else — a developer who edited src/ and runs one test file — dist/'s
 * record does not match and the build is compiled here, once per content, into the cache;
 * never into dist/, which other tests and the repo's bin read while this runs. A dist/ whose
 * files differ from what its build wrote (edited, half rebuilt, deleted) is not reused.
 *
 * The cache is node_modules/.cache/outboxkit-build/ (gitignored with node_modules, and
 * emptied by `npm ci`, which builds dist/ again):
 *
 * - `dist.json`: the hash dist/ was built from, and the hash of dist/ itself;
 * - `build-<hash>/dist/`: a build compiled here;
 * - `package-<hash>/`: the package as npm packs it (package.json, bin/, dist/, LICENSE,
 *   README.md), named by the build's hash and those files';
 * - `package-<hash>.pack/`: its tarball, and what `npm pack --json` said of it.
 *
 * Each entry is made in a temporary folder and renamed into place once complete, under a
 * lock, so test files running at once make it once and never see half of one.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

/** The repository root. */
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const TSC = join(REPO, 'node_modules/typescript/bin/tsc');
const BUILD_CONFIG = join(REPO, 'tsconfig.build.json');
/** Where builds, packages and tarballs are kept (see the module comment). */
export const CACHE = join(REPO, 'node_modules/.cache/outboxkit-build');
const DIST = join(REPO, 'dist');
const DIST_RECORD = join(CACHE, 'dist.json');
const DIST_PENDING = join(CACHE, 'dist.pending.json');
/** What the package ships besides dist/ (package.json `files`), and package.json itself. */
const PACKAGE_FILES = ['package.json', 'bin', 'LICENSE', 'README.md'];
/** A lock with no owner written this long after it was taken was left by a process that died. */
const ORPHAN_LOCK_MS = 30_000;
/** How long to wait for another process making an entry. */
const WAIT_MS = 15 * 60_000;
/** When an entry is made, others of its kind past this many, or older than KEEP_MS, are removed. */
const KEEP_OTHERS = 3;
const KEEP_MS = 24 * 3600_000;

/** What `npm pack --json` says of the tarball. */
export interface Packed {
  readonly tarball: string;
  readonly files: readonly string[];
  readonly size: number;
  readonly unpackedSize: number;
}

/** A build: the sources it was compiled from, its dist/ folder and the hash of the files in it. */
interface Built {
  readonly sources: string;
  readonly dist: string;
  readonly output: string;
}

/** dist/'s record: the sources it was built from and what the build wrote. */
interface DistRecord {
  readonly sources: string;
  readonly output: string;
}

/** The files `tsc -p tsconfig.build.json` compiles, absolute, sorted. */
function compiledFiles(): string[] {
  const parsed = ts.getParsedCommandLineOfConfigFile(BUILD_CONFIG, undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(
        `tsconfig.build.json: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
      );
    },
  });
  if (!parsed) throw new Error('tsconfig.build.json could not be read');
  return [...parsed.fileNames].sort();
}

/** Hash `files` (absolute; missing ones count as missing) by their paths in the repo and bytes. */
function hashFiles(files: readonly string[], base = REPO): string {
  const hash = createHash('sha256');
  for (const file of files) {
    hash.update(`${relative(base, file)}\0`);
    hash.update(existsSync(file) ? readFileSync(file) : '\0missing\0');
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/** Every file under `dir`, absolute, sorted. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else out.push(path);
    }
  };
  if (existsSync(dir)) walk(dir);
  return out.sort();
}

/** The hash of a folder's files (paths relative to it, and contents). */
export function treeHash(dir: string): string {
  return hashFiles(filesUnder(dir), dir);
}

/** The hash of everything the build is compiled from (see the module comment). */
export function sourcesHash(): string {
  const typescript = JSON.parse(
    readFileSync(join(REPO, 'node_modules/typescript/package.json'), 'utf8'),
  ) as { version: string };
  const inputs = [
    BUILD_CONFIG,
    join(REPO, 'tsconfig.json'),
    join(REPO, 'package.json'),
    join(REPO, 'package-lock.json'),
    ...compiledFiles(),
  ];
  return createHash('sha256')
    .update(`typescript@${typescript.version}\0${hashFiles(inputs)}`)
    .digest('hex')
    .slice(0, 16);
}

/** The hash of the package of build `sources`: it and the other files the package ships. */
function packageHash(sources: string): string {
  const files = PACKAGE_FILES.flatMap((name) => {
    const path = join(REPO, name);
    return existsSync(path) && statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
  return createHash('sha256')
    .update(`${sources}\0${hashFiles(files)}`)
    .digest('hex')
    .slice(0, 16);
}

function readJson<T>(file: string): T | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The cache entry `name`: `read()` when it is already complete, else `make(tmp)` builds it
 * in a temporary folder that is then renamed to `name`. One process makes it (a lock folder
 * holds its pid); the others wait for it, or take over a lock whose process died.
 */
function cached<T>(
  name: string,
  read: (dir: string) => T | undefined,
  make: (tmp: string) => void,
): T {
  const dir = join(CACHE, name);
  const lock = `${dir}.lock`;
  mkdirSync(CACHE, { recursive: true });
  const until = Date.now() + WAIT_MS;
  for (;;) {
    const done = read(dir);
    if (done !== undefined) return done;
    try {
      mkdirSync(lock);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = readJson<{ pid: number }>(join(lock, 'owner.json'))?.pid;
      const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      // Its process died: while making it, or (no owner written) right after taking the lock.
      if (owner ? !alive(owner) : age > ORPHAN_LOCK_MS) {
        rmSync(lock, { recursive: true, force: true });
      } else if (Date.now() > until) {
        throw new Error(`timed out waiting for ${lock} (held by pid ${owner})`);
      } else sleep(250);
      continue;
    }
    try {
      writeFileSync(join(lock, 'owner.json'), JSON.stringify({ pid: process.pid }));
      const again = read(dir);
      if (again !== undefined) return again;
      const tmp = `${dir}.tmp-${process.pid}`;
      rmSync(tmp, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true }); // an incomplete one
      mkdirSync(tmp, { recursive: true });
      try {
        make(tmp);
        renameSync(tmp, dir);
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
      pruneOthers(name);
      const made = read(dir);
      if (made === undefined) throw new Error(`${dir} is incomplete right after it was made`);
      return made;
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

/** An entry's kind (`build`, `package`, `package.pack`), or undefined for a lock or a temporary one. */
function kindOf(entry: string): string | undefined {
  const match = /^(build|package)-[0-9a-f]{16}(\.pack)?$/.exec(entry);
  return match ? `${match[1]}${match[2] ?? ''}` : undefined;
}

/**
 * Remove entries of `keep`'s kind made for other contents: past the newest few (one per
 * content a developer went through), and any older than a day.
 */
function pruneOthers(keep: string): void {
  const kind = kindOf(keep);
  const others = readdirSync(CACHE)
    .filter((entry) => entry !== keep && kindOf(entry) === kind)
    .map((entry) => ({ path: join(CACHE, entry), mtimeMs: statSync(join(CACHE, entry)).mtimeMs }))
    .sort((a, b) => b.mtimeMs - a.mtimeMs);
  others.forEach(({ path, mtimeMs }, i) => {
    if (i >= KEEP_OTHERS || Date.now() - mtimeMs > KEEP_MS)
      rmSync(path, { recursive: true, force: true });
  });
}

/** Run a command to the end; throw with its output when it fails. */
function run(command: string, args: readonly string[], cwd: string): string {
  const result = spawnSync(command, args, {
    cwd,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} (in ${cwd}) exited ${result.status ?? result.signal}\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result.stdout;
}

/** The sources changed while they were compiled: what tsc wrote is a build of neither. */
class SourcesChanged extends Error {
  override name = 'SourcesChanged';
}

/**
 * `use(sources)` with the current sources' hash; again with the new hash when they changed
 * while it compiled them (someone saved a file), so an entry is only ever named by the
 * sources it was compiled from.
 */
function withSources<T>(use: (sources: string) => T): T {
  for (let attempt = 1; ; attempt++) {
    try {
      return use(sourcesHash());
    } catch (error) {
      if (!(error instanceof SourcesChanged) || attempt === 3) throw error;
    }
  }
}

/** The build of `sources` compiled here, into the cache (once per content). */
function compiledDist(sources: string): Built {
  const name = `build-${sources}`;
  return cached(
    name,
    (dir) => readJson<Built>(join(dir, 'built.json')),
    (tmp) => {
      run(process.execPath, [TSC, '-p', BUILD_CONFIG, '--outDir', join(tmp, 'dist')], REPO);
      if (sourcesHash() !== sources)
        throw new SourcesChanged('the sources changed during the build');
      const built: Built = {
        sources,
        dist: join(CACHE, name, 'dist'),
        output: treeHash(join(tmp, 'dist')),
      };
      writeFileSync(join(tmp, 'built.json'), JSON.stringify(built));
    },
  );
}

/**
 * The build of the current sources: the repo's dist/ when `npm run build` recorded it for
 * these sources and its files are still the ones it wrote, else {@link compiledDist}.
 */
export function builtDist(): Built {
  return withSources(distOf);
}

function distOf(sources: string): Built {
  const record = readJson<DistRecord>(DIST_RECORD);
  if (record?.sources === sources && treeHash(DIST) === record.output) {
    return { sources, dist: DIST, output: record.output };
  }
  return compiledDist(sources);
}

/**
 * The package of the current sources as npm packs it, in a folder of its own: package.json,
 * bin/, LICENSE and README.md copied from the repo beside the build's dist/. Its files are
 * never changed afterwards, so a test may link an app's node_modules/outboxkit to it and
 * run its bin (dist/'s imports of commander, zod … resolve to the repo's node_modules).
 */
export function builtPackage(): string {
  return withSources(packageOf);
}

function packageOf(sources: string): string {
  return cached(
    `package-${packageHash(sources)}`,
    (dir) => (existsSync(join(dir, 'package.done')) ? dir : undefined),
    (tmp) => {
      for (const file of PACKAGE_FILES) {
        cpSync(join(REPO, file), join(tmp, file), { recursive: true });
      }
      const copy = (build: Built) => {
        rmSync(join(tmp, 'dist'), { recursive: true, force: true });
        cpSync(build.dist, join(tmp, 'dist'), { recursive: true });
        return treeHash(join(tmp, 'dist')) === build.output;
      };
      // The repo's dist/ may be rebuilt while it is copied: then the cache's build it is.
      const build = distOf(sources);
      if (!copy(build) && !(build.dist === DIST && copy(compiledDist(sources)))) {
        throw new Error(`${build.dist} changed while it was copied into the package`);
      }
      writeFileSync(join(tmp, 'package.done'), '');
    },
  );
}

/** The tarball `npm pack` makes of {@link builtPackage} (scripts off: it is built). */
export function packedTarball(): Packed {
  const pkg = builtPackage();
  const name = `${relative(CACHE, pkg)}.pack`;
  return cached(
    name,
    (dir) => {
      const info = readJson<Packed>(join(dir, 'packed.json'));
      return info && existsSync(info.tarball) ? info : undefined;
    },
    (tmp) => {
      const out = run(
        'npm',
        ['pack', '--ignore-scripts', '--json', '--pack-destination', tmp],
        pkg,
      );
      const [info] = JSON.parse(out) as {
        filename: string;
        size: number;
        unpackedSize: number;
        files: { path: string }[];
      }[];
      const packed: Packed = {
        tarball: join(CACHE, name, info.filename),
        files: info.files.map((f) => f.path).sort(),
        size: info.size,
        unpackedSize: info.unpackedSize,
      };
      writeFileSync(join(tmp, 'packed.json'), JSON.stringify(packed));
    },
  );
}

/**
 * `npm run build`'s prebuild (`begin`) and postbuild (`end`): forget dist/'s record before
 * it is rebuilt, note the sources' hash, and after the build record dist/ as the build of
 * those sources — unless they changed while it ran (then nothing is recorded, and the tests
 * compile their own). Never fails the build: a problem is a warning.
 */
function recordDist(step: string): void {
  mkdirSync(CACHE, { recursive: true });
  if (step === 'begin') {
    rmSync(DIST_RECORD, { force: true });
    writeFileSync(DIST_PENDING, JSON.stringify({ sources: sourcesHash() }));
    return;
  }
  if (step !== 'end') throw new Error(`usage: build.ts begin|end|check (got ${step})`);
  const pending = readJson<{ sources: string }>(DIST_PENDING);
  rmSync(DIST_PENDING, { force: true });
  if (!pending) return;
  if (pending.sources !== sourcesHash()) {
    console.warn(
      'build: the sources changed while dist/ was built; it is not recorded as their build',
    );
    return;
  }
  const record: DistRecord = { sources: pending.sources, output: treeHash(DIST) };
  writeFileSync(DIST_RECORD, JSON.stringify(record));
}

/**
 * `check` (.ci/run, after `npm ci`): whether dist/ is recorded as the build of the current
 * sources, so the tests reuse it rather than compile the package again. Exits 1 when not.
 */
function checkDist(): void {
  const sources = sourcesHash();
  const record = readJson<DistRecord>(DIST_RECORD);
  const problem = !record
    ? 'no build of dist/ is recorded (npm run build records it)'
    : record.sources !== sources
      ? `dist/ was built from other sources (${record.sources}, now ${sources})`
      : treeHash(DIST) !== record.output
        ? 'dist/ has changed since it was built'
        : undefined;
  if (problem) {
    console.error(`build: ${problem}: the tests would compile the package again`);
    process.exit(1);
  }
  console.log(`build: dist/ is the build of these sources (${sources}); the tests reuse it`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const step = process.argv[2] ?? '';
  if (step === 'check') checkDist();
  else {
    try {
      recordDist(step);
    } catch (error) {
      console.warn(`build: dist/ not recorded (${error instanceof Error ? error.message : error})`);
      rmSync(DIST_RECORD, { force: true });
    }
  }
}
