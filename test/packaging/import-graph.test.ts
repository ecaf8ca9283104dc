import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cycles, type ImportEdge, importEdges, sourceFiles } from './support/import-graph.js';

/**
 * The layering of the design's "Layout": dependencies point inward to src/. `src/` is the
 * runtime `import 'outboxkit'` loads, so it imports nothing from the CLI, codegen, the
 * catalogue renderer, the test harness or the examples — not even lazily, since a dynamic
 * import is still an edge (the cycle issue 12 found was hidden by dynamic imports). Whether
 * `import 'outboxkit'` really loads none of ts-morph, tsx and handlebars is checked on the
 * installed tarball (tarball.test.ts).
 */
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const FOLDERS = ['src', 'cli', 'codegen', 'catalogue', 'console', 'testing', 'examples'] as const;

/** What src/ must not reach. outbox.config.ts is the repo's example config. */
const OUTSIDE_THE_RUNTIME = [
  'cli/',
  'codegen/',
  'catalogue/',
  // The operations console (`outboxkit/console`): it reads the runtime and the catalogue's
  // AsyncAPI builder; `import 'outboxkit'` loads none of it.
  'console/',
  'testing/',
  'examples/',
  'outbox.config.ts',
  // The CLI's old place: until the move to cli/ has landed everywhere, src/cli/ may still
  // exist; it is the CLI (which may import everything), not the runtime.
  'src/cli/',
];

/**
 * src/'s parts in rank order, lowest first: a part's VALUE imports point only to parts of a
 * lower rank (type-only imports vanish at run time and are free), so no two parts of the
 * runtime depend on each other and each can be read, tested and replaced from the bottom
 * up. A part is a subfolder of src/ or a file directly in it. Where a lower part needs what
 * a higher one does, it is handed in at `createOutbox` instead of imported (the relay's
 * eager delivery as `rt.arrangeEager`, `health()` for the metrics' gauges).
 */
const RANKS: readonly (readonly string[])[] = [
  ['errors'],
  ['codec'],
  ['declare'],
  ['introspect'],
  ['scope'],
  ['sequelize', 'runtime.ts'],
  ['transaction'],
  ['storage'],
  ['event-columns'],
  ['observe'],
  ['transports'],
  ['tasks'],
  ['wakeups'],
  ['fire'],
  ['ops'],
  ['relay'],
  ['capture'],
  ['inbox'],
  ['outbox.ts'],
  ['index.ts'],
];
const rankOf = new Map(RANKS.flatMap((parts, rank) => parts.map((p) => [p, rank] as const)));
/** The part of src/ a runtime file belongs to: its subfolder, or itself at the top. */
const partOf = (path: string) => path.split('/')[1];

const files = [...sourceFiles(REPO, FOLDERS), 'outbox.config.ts'];
const edges = importEdges(REPO, files);
/** src/ without the CLI's old place, which is not the runtime. */
const isRuntime = (path: string) => path.startsWith('src/') && !path.startsWith('src/cli/');
const describeEdge = (e: ImportEdge) =>
  `${e.from} -> ${e.to}${e.dynamic ? ' (dynamic import)' : e.typeOnly ? ' (type-only)' : ''}`;

describe('the import graph', () => {
  it('every relative import resolves to a file of the repo', () => {
    expect(files.filter(isRuntime).length).toBeGreaterThan(50);
    expect(edges.filter((e) => !e.resolved).map((e) => `${e.from}: ${e.specifier}`)).toEqual([]);
  });

  it('src/ imports nothing from cli/, codegen/, catalogue/, console/, testing/ or examples/, not even lazily', () => {
    const crossing = edges.filter(
      (e) => isRuntime(e.from) && OUTSIDE_THE_RUNTIME.some((outside) => e.to.startsWith(outside)),
    );
    expect(crossing.map(describeEdge)).toEqual([]);
  });

  it('src/ holds no generated file: the example config’s emitters live beside the example', () => {
    expect(files.filter((f) => isRuntime(f) && f.endsWith('.generated.ts'))).toEqual([]);
    expect(files).toContain('examples/shop/outbox.generated.ts');
  });

  it('every part of src/ has a rank (a new folder says where it stands)', () => {
    const parts = [...new Set(files.filter(isRuntime).map(partOf))].sort();
    expect(parts.filter((p) => !rankOf.has(p))).toEqual([]);
    expect([...rankOf.keys()].filter((p) => !parts.includes(p))).toEqual([]);
  });

  it("src/'s parts import only parts ranked below them: no loop, no upward arrow (value imports)", () => {
    const upward = edges.filter((e) => {
      if (e.typeOnly || !isRuntime(e.from) || !isRuntime(e.to)) return false;
      const from = partOf(e.from);
      const to = partOf(e.to);
      return from !== to && (rankOf.get(to) ?? Infinity) >= (rankOf.get(from) ?? -Infinity);
    });
    expect(
      upward.map((e) => `${describeEdge(e)} (${partOf(e.from)} may not import ${partOf(e.to)})`),
    ).toEqual([]);
  });

  it("nothing `import 'outboxkit'` loads reaches outboxkit/opentelemetry, the one folder that loads @opentelemetry/api", () => {
    const OTEL = 'src/observe/opentelemetry/';
    // Every file the root entry loads: value imports, lazy ones included.
    const reached = new Set(['src/index.ts']);
    for (let grew = true; grew; ) {
      grew = false;
      for (const e of edges) {
        if (e.typeOnly || !reached.has(e.from) || reached.has(e.to)) continue;
        reached.add(e.to);
        grew = true;
      }
    }
    expect(reached.size).toBeGreaterThan(50);
    expect([...reached].filter((f) => f.startsWith(OTEL))).toEqual([]);
    const mentioning = files.filter(
      (f) =>
        isRuntime(f) &&
        !f.startsWith(OTEL) &&
        readFileSync(resolve(REPO, f), 'utf8').includes('@opentelemetry/'),
    );
    expect(mentioning).toEqual([]);
  });

  it("nothing `import 'outboxkit'` loads imports prom-client: outbox.metrics() requires it when called", () => {
    const reached = new Set(['src/index.ts']);
    for (let grew = true; grew; ) {
      grew = false;
      for (const e of edges) {
        if (e.typeOnly || !reached.has(e.from) || reached.has(e.to)) continue;
        reached.add(e.to);
        grew = true;
      }
    }
    // the metrics are reachable (outbox.metrics() is a method), their package is not
    expect(reached.has('src/observe/metrics/outbox-metrics.ts')).toBe(true);
    const valueImport =
      /^\s*(?:import(?!\s+type\b)[^;]*?from\s*|export[^;]*?from\s*|import\s*\()\s*['"]prom-client['"]/m;
    expect(
      [...reached].filter((f) => valueImport.test(readFileSync(resolve(REPO, f), 'utf8'))),
    ).toEqual([]);
    const requiring = files.filter(
      (f) => isRuntime(f) && /\(\s*'prom-client'\s*\)/.test(readFileSync(resolve(REPO, f), 'utf8')),
    );
    expect(requiring).toEqual(['src/observe/metrics/load-prom-client.ts']);
  });

  it('src/ has no circular imports, type-only ones included', () => {
    const runtime = edges.filter((e) => isRuntime(e.from) && isRuntime(e.to));
    expect(cycles(runtime).map((c) => c.join(' <-> '))).toEqual([]);
  });

  it('the folders import each other without a cycle (the CLI may import everything, nothing imports the CLI)', () => {
    const folderOf = (path: string) =>
      path.startsWith('src/cli/')
        ? 'cli'
        : path === 'outbox.config.ts'
          ? 'examples'
          : path.split('/')[0];
    const between = edges
      .filter((e) => folderOf(e.from) !== folderOf(e.to))
      .map((e) => ({ ...e, from: folderOf(e.from), to: folderOf(e.to) }));
    expect(cycles(between).map((c) => c.join(' <-> '))).toEqual([]);
    const intoCli = edges.filter((e) => folderOf(e.to) === 'cli' && folderOf(e.from) !== 'cli');
    expect(intoCli.map(describeEdge)).toEqual([]);
  });
});
