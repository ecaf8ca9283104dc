import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Packed, packedTarball } from './support/build.js';
import {
  installConsumer,
  lowestOf,
  manifest,
  REPO,
  typecheck,
  typecheckLibs,
} from './support/tarball.js';

/**
 * SLOW (~1 min, most of it `npm install`): the package as an app gets it. The build of the
 * current sources (support/build.ts: in CI the one `npm ci` made; else compiled once per
 * content), its `npm pack`, one install of the tarball into a fresh project with the LOWEST
 * versions the peer ranges admit (npm's cache serves most of it; the lowest peers may
 * come from the registry), and every test below reuses that one app: the ESM app, the
 * CommonJS app, the types, the install hint for the missing pg, and what `import
 * 'outboxkit'` loads. The app has no optional peer installed — the codegen toolchain
 * (ts-morph, handlebars, tsx, yaml) included — until the last group, which links the
 * toolchain in as an app's devDependencies would put it there.
 */
const LOWEST = {
  sequelize: lowestOf(manifest.peerDependencies.sequelize),
  zod: lowestOf(manifest.peerDependencies.zod),
};

/** What test/packaging/consumer/scenario.cjs prints. */
interface ScenarioResult {
  seen: string[];
  succeeded: number;
  fields: { name: string; type: string; required: boolean; description: string | null }[];
  pgMissing: { name?: string; code?: string; message?: string; error?: null };
  errors: { zod3: string | null; version: string | null };
}

const STEP_MS = 60_000;

describe(`[slow] the packed tarball, installed in a fresh app with sequelize@${LOWEST.sequelize} and zod@${LOWEST.zod} (the lowest the peer ranges admit)`, () => {
  let work: string;
  let packed: Packed;
  let app: string;

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'outboxkit-tarball-'));
    packed = packedTarball();
    app = installConsumer(work, packed.tarball, LOWEST);
  }, 300_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** A config the app's CLI can load, written as `file` (its form, .mjs or .ts, by name). */
  const writeConfig = (file: string) => {
    writeFileSync(
      join(app, file),
      [
        "import { z } from 'zod';",
        "import { defineOutbox, event, receiver } from 'outboxkit';",
        'const Ping = event({ schema: z.object({ n: z.number() }) });',
        'export default defineOutbox({',
        "  events: { 'app.Ping': Ping },",
        "  receivers: { 'app.log': receiver(Ping, { handle: async () => {} }) },",
        '});',
        '',
      ].join('\n'),
    );
  };
  /** The app's installed `outbox` bin, run in the app. */
  const outbox = (...args: string[]) =>
    spawnSync(join(app, 'node_modules', '.bin', 'outbox'), args, {
      cwd: app,
      encoding: 'utf8',
      env: { ...process.env, DATABASE_URL: '' },
    });
  /** The major of a peer range: `^28.0.0` → `^28`, what the install hints ask for. */
  const major = (name: string) => `^${lowestOf(manifest.peerDependencies[name]).split('.')[0]}`;

  const results = new Map<string, ScenarioResult>();
  /** Run one of the app's entry scripts (once) against a fresh SQLite file; its JSON line. */
  const scenario = (entry: string): ScenarioResult => {
    const known = results.get(entry);
    if (known) return known;
    const dir = join(work, `db-${entry}`);
    mkdirSync(dir, { recursive: true });
    const result = spawnSync(process.execPath, [entry, dir], { cwd: app, encoding: 'utf8' });
    expect(result.status, `${entry} failed:\n${result.stdout}\n${result.stderr}`).toBe(0);
    // Nothing on stderr but, on some Nodes, require(esm)'s ExperimentalWarning (none on 20.20).
    expect(result.stderr.replace(/^.*(ExperimentalWarning|--trace-warnings).*\n?/gm, '')).toBe('');
    const parsed = JSON.parse(result.stdout.trim().split('\n').at(-1)!) as ScenarioResult;
    results.set(entry, parsed);
    return parsed;
  };

  it('ships dist/, bin/, LICENSE, README.md and package.json, and nothing else', () => {
    const outside = packed.files.filter(
      (f) => !/^(dist|bin)\//.test(f) && !['LICENSE', 'README.md', 'package.json'].includes(f),
    );
    expect(outside).toEqual([]);
    for (const file of [
      'LICENSE',
      'README.md',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/testing/index.js',
      'dist/testing/conformance/index.js',
    ]) {
      expect(packed.files).toContain(file);
    }
    // TypeScript sources are not shipped (their maps carry them instead), nor are the tests.
    expect(packed.files.filter((f) => /\.[mc]?ts$/.test(f) && !/\.d\.[mc]?ts$/.test(f))).toEqual(
      [],
    );
    expect(packed.files.filter((f) => f.startsWith('dist/test/'))).toEqual([]);
    console.info(
      `outboxkit tarball: ${packed.files.length} files, ${(packed.size / 1024).toFixed(0)} kB packed, ${(packed.unpackedSize / 1024).toFixed(0)} kB unpacked`,
    );
  });

  it('every export and the bin point at files the tarball has', () => {
    const targets = Object.values(manifest.exports).flatMap((entry) =>
      typeof entry === 'string' ? [entry] : Object.values(entry),
    );
    for (const target of targets) expect(packed.files).toContain(target.replace(/^\.\//, ''));
    for (const bin of Object.values(manifest.bin)) {
      const file = bin.replace(/^\.\//, '');
      expect(packed.files).toContain(file);
      // What the bin imports (the compiled CLI) must be in the tarball too.
      const source = readFileSync(join(app, 'node_modules/outboxkit', file), 'utf8');
      for (const [, specifier] of source.matchAll(/from '(\.[^']+)'/g)) {
        const path = join('bin', specifier).split('\\').join('/');
        expect(packed.files, `${file} imports ${specifier}`).toContain(path);
      }
    }
  });

  it('ships no source maps, and no .js file names one: the .ts sources they would point at are not shipped', () => {
    // Dropped rather than shipped with their sources inlined (tsconfig.build.json says why).
    expect(packed.files.filter((f) => f.endsWith('.map'))).toEqual([]);
    const js = packed.files.filter((f) => f.endsWith('.js') && f.startsWith('dist/'));
    expect(js.length).toBeGreaterThan(50);
    const naming = js.filter((f) =>
      readFileSync(join(app, 'node_modules/outboxkit', f), 'utf8').includes('sourceMappingURL'),
    );
    expect(naming).toEqual([]);
  });

  it(
    "the installed bin reads the app's own config: --version, migrate, then relay --once delivers and exits 0",
    () => {
      const dir = join(work, 'db-cli');
      mkdirSync(dir, { recursive: true });
      const url = `sqlite:${join(dir, 'app.sqlite')}`;
      writeFileSync(
        join(app, 'outbox.config.mjs'),
        [
          "import { z } from 'zod';",
          "import { defineOutbox, event, receiver } from 'outboxkit';",
          'const Ping = event({ schema: z.object({ n: z.number() }) });',
          'export default defineOutbox({',
          "  events: { 'app.Ping': Ping },",
          "  receivers: { 'app.log': receiver(Ping, { handle: async () => {} }) },",
          '});',
          '',
        ].join('\n'),
      );
      const bin = join(app, 'node_modules', '.bin', 'outbox');
      const run = (...args: string[]) =>
        spawnSync(bin, args, {
          cwd: app,
          encoding: 'utf8',
          env: { ...process.env, DATABASE_URL: '' },
        });

      const version = run('--version');
      expect(version.status, version.stderr).toBe(0);
      expect(version.stdout.trim()).toBe(manifest.version);

      const migrated = run('migrate', '--config', 'outbox.config.mjs', '--url', url);
      expect(migrated.status, `${migrated.stdout}\n${migrated.stderr}`).toBe(0);

      // The app fires one event with its own Sequelize, through the installed package.
      const fire = spawnSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          [
            "import { Sequelize } from 'sequelize';",
            "import { createOutbox } from 'outboxkit';",
            "import config from './outbox.config.mjs';",
            `const sequelize = new Sequelize(${JSON.stringify(url)}, { logging: false });`,
            'const outbox = createOutbox(config, { sequelize });',
            "await outbox.fire('app.Ping', { n: 1 });",
            'await outbox.close(); await sequelize.close();',
          ].join('\n'),
        ],
        { cwd: app, encoding: 'utf8' },
      );
      expect(fire.status, fire.stderr).toBe(0);

      const relayed = run('relay', '--once', '--config', 'outbox.config.mjs', '--url', url);
      expect(relayed.status, `${relayed.stdout}\n${relayed.stderr}`).toBe(0);
      expect(`${relayed.stdout}${relayed.stderr}`).toMatch(/succeeded\W+1\b/);
    },
    STEP_MS,
  );

  it(
    'without the codegen toolchain installed, each command that needs a part of it names the package and the npm install that adds it',
    () => {
      for (const name of ['ts-morph', 'handlebars', 'tsx', 'yaml']) {
        expect(existsSync(join(app, 'node_modules', name)), `${name} installed`).toBe(false);
      }
      writeConfig('toolchain.config.mjs');
      writeConfig('toolchain.config.ts');

      const codegen = outbox('codegen', '--config', 'toolchain.config.mjs');
      expect(codegen.status, codegen.stdout).toBe(1);
      expect(codegen.stderr).toBe(
        `outbox: npx outbox codegen needs ts-morph and handlebars, which are not installed: npm install --save-dev ts-morph@${major('ts-morph')} handlebars@${major('handlebars')}\n`,
      );
      expect(existsSync(join(app, 'src/outbox.generated.ts'))).toBe(false);

      // A TypeScript config needs tsx; the same config as .mjs needs nothing (the relay
      // test above runs one).
      const health = outbox(
        'health',
        '--config',
        'toolchain.config.ts',
        '--url',
        'sqlite::memory:',
      );
      expect(health.status, health.stdout).toBe(1);
      expect(health.stderr).toContain(
        `config failed to load at ${join(app, 'toolchain.config.ts')}\na TypeScript config needs tsx, which is not installed: npm install --save-dev tsx@${major('tsx')}`,
      );
      expect(health.stderr).toContain('or compile the config to JavaScript and pass --config');

      const asyncapi = outbox('catalogue', 'asyncapi', '--config', 'toolchain.config.mjs');
      expect(asyncapi.status, asyncapi.stdout).not.toBe(0);
      expect(asyncapi.stderr).toContain(
        `the AsyncAPI document's YAML form needs yaml, which is not installed: npm install --save-dev yaml@${major('yaml')}, or pass --format json`,
      );
      const json = outbox(
        'catalogue',
        'asyncapi',
        '--config',
        'toolchain.config.mjs',
        '--format',
        'json',
      );
      expect(json.status, json.stderr).toBe(0);
      expect(JSON.parse(json.stdout)).toMatchObject({ asyncapi: '3.0.0' });
    },
    STEP_MS,
  );

  it(
    'an ESM app fires in a transaction and drains on SQLite at the lowest peer versions',
    () => {
      const result = scenario('smoke.mjs');
      expect(result.seen.sort()).toEqual(['committed o1', 'o1@true']);
      expect(result.succeeded).toBe(1);
      expect(result.fields).toEqual([
        { name: 'at', type: 'string (date-time)', required: true, description: null },
        { name: 'orderId', type: 'string', required: true, description: 'the order' },
      ]);
    },
    STEP_MS,
  );

  it(
    'names zod 4 when the app hands it a zod 3 schema, and keeps its config messages at the lowest zod',
    () => {
      const { errors } = scenario('smoke.mjs');
      expect(errors.zod3).toContain('must be a zod 4 schema');
      expect(errors.zod3).toContain('(got a zod 3 schema)');
      expect(errors.version).toBe(
        'ConfigurationError: Invalid outbox config:\n  events["a.B"].version must be an integer ≥ 1 (got 0)',
      );
    },
    STEP_MS,
  );

  it(
    'without pg installed (an optional peer), listenNotifyWakeup says to npm install pg',
    () => {
      expect(scenario('smoke.mjs').pgMissing).toEqual({
        name: 'ConfigurationError',
        code: 'OUTBOX_CONFIGURATION',
        message:
          'listenNotifyWakeup() needs the pg package (node-postgres), which is not installed: run `npm install pg`',
      });
    },
    STEP_MS,
  );

  it(
    'without @opentelemetry/api installed (an optional peer), outboxkit/opentelemetry imports and openTelemetry() says to npm install it',
    () => {
      const script = `import('outboxkit/opentelemetry').then((m) => {
        try { m.openTelemetry(); console.log(JSON.stringify({ error: null })); }
        catch (e) { console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message })); }
      });`;
      const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: app,
        encoding: 'utf8',
      });
      expect(result.status, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout.trim())).toEqual({
        name: 'ConfigurationError',
        code: 'OUTBOX_CONFIGURATION',
        message:
          'openTelemetry() needs the @opentelemetry/api package, which is not installed: run `npm install @opentelemetry/api` (and set up an OpenTelemetry SDK to export the spans)',
      });
    },
    STEP_MS,
  );

  it(
    'without prom-client installed (an optional peer), outboxkit imports and outbox.metrics() says to npm install it',
    () => {
      const script = `import('outboxkit').then(async (m) => {
        const { Sequelize } = await import('sequelize');
        const sequelize = new Sequelize('sqlite::memory:', { logging: false });
        const outbox = m.createOutbox(m.defineOutbox({ events: {} }), { sequelize, wakeup: null });
        try { outbox.metrics(); console.log(JSON.stringify({ error: null })); }
        catch (e) { console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message })); }
        await sequelize.close();
      });`;
      const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: app,
        encoding: 'utf8',
      });
      expect(result.status, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout.trim())).toEqual({
        name: 'ConfigurationError',
        code: 'OUTBOX_CONFIGURATION',
        message:
          'outbox.metrics() needs the prom-client package, which is not installed: run `npm install prom-client`',
      });
    },
    STEP_MS,
  );

  // require(esm): unflagged from Node 20.19 and 22.12; older Nodes cannot require() this
  // package at all (ERR_REQUIRE_ESM), which is what the skip says.
  it.skipIf(!process.features.require_module)(
    `a CommonJS app can require('outboxkit') and require('outboxkit/testing') (Node ${process.version}: require(esm) ${process.features.require_module ? 'available' : 'NOT available — skipped'})`,
    () => {
      const result = scenario('smoke.cjs');
      expect(result.seen.sort()).toEqual(['committed o1', 'o1@true']);
      expect(result.succeeded).toBe(1);
      expect(result.errors.zod3).toContain('(got a zod 3 schema)');
      expect(result.pgMissing.name).toBe('ConfigurationError');
      // A CommonJS app's require('zod') and outboxkit's import of zod are two copies of
      // zod; before zod 4.2 each kept its own registry, so the catalogue reads each schema's
      // metadata through the schema itself: the .describe() text is there at zod 4.0 too.
      expect(result.fields).toEqual([
        { name: 'at', type: 'string (date-time)', required: true, description: null },
        { name: 'orderId', type: 'string', required: true, description: 'the order' },
      ]);
    },
    STEP_MS,
  );

  it('the types compile in an ESM TypeScript app at the lowest peer versions, without decaying to any', () => {
    const result = typecheck(app);
    expect(result.status, `${result.stdout}\n${result.stderr}`).toBe(0);
  }, 120_000);

  /**
   * The one .d.ts that imports an optional peer's types: `outboxkit/opentelemetry`'s, whose
   * options take the app's own OpenTelemetry `Tracer` and `TextMapPropagator` — an entry
   * point that needs `@opentelemetry/api` at run time anyway, and that an app without it
   * never imports (so its compiler never reads this file). Every other declaration needs no
   * optional peer's types. The list is held exactly: a new leak fails the test.
   */
  const KNOWN_PEER_TYPE_IMPORTS = [
    "dist/src/observe/opentelemetry/open-telemetry.d.ts: TS2307 Cannot find module '@opentelemetry/api' or its corresponding type declarations.",
  ];

  it('the .d.ts files of every entry point type-check with skipLibCheck off, with no optional peer (nor its types) installed', () => {
    for (const name of [
      'pg',
      '@types/pg',
      'ioredis',
      'amqplib',
      '@types/amqplib',
      'kafkajs',
      'prom-client',
      '@opentelemetry/api',
      'undici',
      'ts-morph',
      'tsx',
      'handlebars',
      'yaml',
    ]) {
      expect(existsSync(join(app, 'node_modules', name)), `${name} installed`).toBe(false);
    }
    const result = typecheckLibs(app);
    const lines = result.stdout.split('\n');
    // The check saw outboxkit's declarations: every entry point's, and what they import.
    const checked = lines.filter((l) => l.includes('/node_modules/outboxkit/dist/'));
    for (const entry of [
      'src/index',
      'testing/index',
      'testing/conformance/index',
      'catalogue/index',
      'src/observe/opentelemetry/index',
      'console/index',
    ]) {
      expect(
        checked.some((l) => l.endsWith(`/dist/${entry}.d.ts`)),
        entry,
      ).toBe(true);
    }
    expect(checked.length).toBeGreaterThan(50);
    // Sequelize 6's own .d.ts files have errors of their own under TypeScript 5.9; only
    // outboxkit's are this package's to answer for.
    const errors = lines.flatMap((l) => {
      const m = /^node_modules\/outboxkit\/(\S+?)\(\d+,\d+\): error (TS\d+): (.*)$/.exec(l);
      return m ? [`${m[1]}: ${m[2]} ${m[3]}`] : [];
    });
    expect([...new Set(errors)].sort()).toEqual(KNOWN_PEER_TYPE_IMPORTS);
  }, 120_000);

  /**
   * Every module a fresh process loads for `target`: ESM files through a resolve hook
   * registered before the import (module.register), CommonJS files (also those a
   * CommonJS package require()s internally, which no ESM hook sees) from require.cache.
   */
  const loaded = (target: string): string[] => {
    const result = spawnSync(
      process.execPath,
      [
        'loaded-modules.mjs',
        target,
        join(work, `trace-${Math.random().toString(36).slice(2)}.log`),
      ],
      { cwd: app, encoding: 'utf8' },
    );
    expect(result.status, result.stderr).toBe(0);
    const { esm, cjs } = JSON.parse(result.stdout) as { esm: string[]; cjs: string[] };
    return [...esm, ...cjs];
  };
  /** The packages (by name) that files under node_modules/ belong to. */
  const packagesOf = (modules: string[]) =>
    [
      ...new Set(
        modules.flatMap((m) => {
          const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(m.split('\\').join('/'));
          return match ? [match[1]] : [];
        }),
      ),
    ].sort();
  describe("what import('outboxkit') loads, in a fresh Node process", () => {
    const TOOLING = [
      'ts-morph',
      '@ts-morph/common',
      'typescript',
      'tsx',
      'esbuild',
      'handlebars',
      'yaml',
      'commander',
      // The CLI's progress bar (cli/progress.ts loads it on first use).
      'cli-progress',
    ];

    it(
      'loads none of ts-morph, TypeScript, tsx, handlebars, commander or cli-progress',
      () => {
        const packages = packagesOf(loaded('outboxkit'));
        expect(packages).toContain('outboxkit');
        expect(packages).toContain('sequelize');
        expect(packages.filter((p) => TOOLING.includes(p))).toEqual([]);
        // The superjson payload codec loads its package on the first superjson payload.
        expect(packages).not.toContain('superjson');
      },
      STEP_MS,
    );

    it(
      "import('outboxkit/catalogue') loads no handlebars either: renderCatalogueMarkdown requires it on its first call",
      () => {
        const packages = packagesOf(loaded('outboxkit/catalogue'));
        expect(packages).toContain('outboxkit');
        expect(packages.filter((p) => TOOLING.includes(p))).toEqual([]);
      },
      STEP_MS,
    );

    it(
      'outboxkit/console loads none of them either: it renders without handlebars',
      () => {
        const packages = packagesOf(loaded('outboxkit/console'));
        expect(packages).toContain('outboxkit');
        expect(packages.filter((p) => TOOLING.includes(p))).toEqual([]);
      },
      STEP_MS,
    );

    it(
      '(the check sees them when they are loaded: the CLI loads commander, codegen ts-morph once it is installed — the last group)',
      () => {
        const cli = packagesOf(
          loaded(pathToFileURL(join(app, 'node_modules/outboxkit/dist/cli/main.js')).href),
        );
        expect(cli).toContain('commander');
      },
      STEP_MS,
    );
  });

  describe("with the codegen toolchain installed, as the app's devDependencies put it (linked from the repo)", () => {
    const TOOLCHAIN = ['ts-morph', 'handlebars', 'tsx', 'yaml'];
    beforeAll(() => {
      for (const name of TOOLCHAIN) {
        symlinkSync(join(REPO, 'node_modules', name), join(app, 'node_modules', name), 'dir');
      }
    });

    it(
      'codegen writes the emitters and the catalogue from a TypeScript config, and asyncapi its YAML',
      () => {
        writeConfig('dev.config.ts');
        const codegen = outbox('codegen', '--config', 'dev.config.ts');
        expect(codegen.status, `${codegen.stdout}\n${codegen.stderr}`).toBe(0);
        for (const file of [
          'src/outbox.generated.ts',
          'catalogue/catalogue.json',
          'catalogue/catalogue.md',
        ]) {
          expect(existsSync(join(app, file)), file).toBe(true);
        }
        expect(readFileSync(join(app, 'catalogue/catalogue.md'), 'utf8')).toContain('app.Ping');
        const asyncapi = outbox('catalogue', 'asyncapi', '--config', 'dev.config.ts');
        expect(asyncapi.status, asyncapi.stderr).toBe(0);
        expect(asyncapi.stdout).toMatch(/^asyncapi: 3\.0\.0$/m);
      },
      STEP_MS,
    );

    it(
      '(the module check sees them when they are loaded: codegen loads ts-morph)',
      () => {
        const dist = join(app, 'node_modules/outboxkit/dist');
        const codegen = packagesOf(loaded(pathToFileURL(join(dist, 'codegen/analyze.js')).href));
        expect(codegen).toContain('ts-morph');
      },
      STEP_MS,
    );
  });
});
