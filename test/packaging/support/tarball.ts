import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const CONSUMER_FIXTURE = join(REPO, 'test/packaging/consumer');
const TSC = join(REPO, 'node_modules/typescript/bin/tsc');

/** The repo's package.json. */
export const manifest = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  bin: Record<string, string>;
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  exports: Record<string, string | Record<string, string>>;
  files: string[];
  engines: Record<string, string>;
};

/** The lowest version a `^x.y.z` range (or the first of `^a || ^b`) admits. */
export function lowestOf(range: string): string {
  const match = /^\^(\d+\.\d+\.\d+)/.exec(range.trim());
  if (!match) throw new Error(`cannot read the lowest version of the range ${range}`);
  return match[1];
}

/** Run a command to the end; throw with its output when it fails. */
export function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
): SpawnSyncReturns<string> {
  const result = spawnSync(command, args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} (in ${cwd}) exited ${result.status ?? result.signal}\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result;
}

/**
 * A fresh app (ESM, `"type": "module"`; its .cjs files are CommonJS) with the tarball and
 * the given peers installed by npm, and the consumer scripts of test/packaging/consumer/.
 * sqlite3 is linked from the repo's own install rather than installed: it is a native
 * module, and building it again would take minutes; pg is left out on purpose (an
 * optional peer: the app without it must still work, and get an install hint), and so is
 * every other optional peer (the codegen toolchain included). @types/node is installed, at
 * the repo's version, as a Node app has it: Sequelize's own .d.ts files need it.
 */
export function installConsumer(
  work: string,
  tarball: string,
  peers: Record<string, string>,
): string {
  const app = join(work, 'app');
  mkdirSync(app, { recursive: true });
  writeFileSync(
    join(app, 'package.json'),
    `${JSON.stringify({ name: 'consumer', version: '0.0.0', private: true, type: 'module' }, null, 2)}\n`,
  );
  for (const file of [
    'scenario.cjs',
    'smoke.mjs',
    'smoke.cjs',
    'loaded-modules.mjs',
    'trace-hooks.mjs',
  ]) {
    copyFileSync(join(CONSUMER_FIXTURE, file), join(app, file));
  }
  copyFileSync(join(CONSUMER_FIXTURE, 'typed.ts.fixture'), join(app, 'typed.ts'));
  copyFileSync(join(CONSUMER_FIXTURE, 'entry-points.ts.fixture'), join(app, 'entry-points.ts'));
  writeFileSync(
    join(app, 'tsconfig.libcheck.json'),
    `${JSON.stringify(
      {
        compilerOptions: {
          module: 'nodenext',
          target: 'es2022',
          strict: true,
          noEmit: true,
          // Every .d.ts file the program reaches is checked, outboxkit's included.
          skipLibCheck: false,
          types: ['node'],
        },
        files: ['entry-points.ts'],
      },
      null,
      2,
    )}\n`,
  );
  writeFileSync(
    join(app, 'tsconfig.json'),
    `${JSON.stringify(
      {
        compilerOptions: {
          module: 'nodenext',
          target: 'es2022',
          strict: true,
          noEmit: true,
          // As apps have it: Sequelize 6's own .d.ts files do not pass TypeScript 5.9's
          // checks. typed.ts asserts that outboxkit's types did not decay to any instead.
          skipLibCheck: true,
          types: [],
        },
        files: ['typed.ts'],
      },
      null,
      2,
    )}\n`,
  );
  const specs = Object.entries(peers).map(([name, version]) => `${name}@${version}`);
  run(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      '--ignore-scripts',
      '--no-package-lock',
      tarball,
      ...specs,
      `@types/node@${manifest.devDependencies['@types/node']}`,
    ],
    app,
  );
  symlinkSync(join(REPO, 'node_modules/sqlite3'), join(app, 'node_modules/sqlite3'), 'dir');
  return app;
}

/**
 * Type-check the app's entry-points.ts with skipLibCheck off (tsconfig.libcheck.json), listing
 * the files of the program.
 */
export function typecheckLibs(app: string): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [TSC, '-p', 'tsconfig.libcheck.json', '--listFiles'], {
    cwd: app,
    encoding: 'utf8',
  });
}

/** Type-check the app's typed.ts with the repo's TypeScript. */
export function typecheck(app: string): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [TSC, '-p', app], { cwd: app, encoding: 'utf8' });
}
