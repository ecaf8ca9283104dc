/**
 * `npm run bench -- --compare` (or `npm run bench:compare`): outboxkit against its limit
 * (the bare SQL loops, `bare/`) and its peers (graphile-worker, pg-boss, `peers/`), every
 * figure interleaved in rounds, then a markdown table of medians and the ratios issue 7
 * asks for. See bench/README.md, "Comparing".
 *
 *   npm run bench -- --compare                          # everything, 3 rounds
 *   npm run bench -- --compare --rounds 1 --events 20000
 *   npm run bench -- --compare --only transport,handler --no-peers
 *   npm run bench -- --compare --only latency --rates 200 --systems outboxkit,graphile
 *
 * A round runs the figures kind by kind (transport drains, handler drains, latency at each
 * rate, write cost), and within a kind every system's figure back to back, in an order
 * that rotates each round, so drift in the machine's load hits them alike. Every figure
 * still prints its own JSON line on stdout; progress and the tables go to stderr, and a
 * last `{"bench":"compare",…}` line on stdout carries the medians and ratios. A figure that
 * fails is reported and left out; the others go on.
 */
import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { emit, note, round, setEmitContext, wholeNumberOption } from './common.js';
import { benchDrain, type DrainKind } from './drain.js';
import { benchLatency, defaultProducers, type LatencySystem } from './latency.js';
import {
  benchPeerDrain,
  GRAPHILE_DRAINS,
  type PeerLatencySetting,
  PGBOSS_DRAINS,
} from './peers/figures.js';
import { ensurePeers } from './peers/install.js';
import { benchWriteCost } from './write-cost.js';

const SYSTEMS = ['outboxkit', 'bare', 'graphile', 'pgboss'] as const;
type System = (typeof SYSTEMS)[number];
const KINDS = ['transport', 'handler', 'latency', 'write'] as const;

/** One figure of a round: its key in the tables, and how to take it. */
interface Job {
  /** The group it is interleaved in: `transport`, `handler`, `latency@200`, `write`. */
  readonly group: string;
  readonly key: string;
  readonly run: () => Promise<Record<string, unknown>>;
}

type Figure = Record<string, unknown>;

/** A whole number ≥ 1 given for `--name`. */
const positiveInt = (name: string, text: string): number => wholeNumberOption(name, text, 1);

function list(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Seconds a latency run measures at `rate` unless told: 10 s at 200/s, else 3 s. */
function defaultSeconds(rate: number): number {
  return rate <= 200 ? 10 : 3;
}

export async function compareMain(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      rounds: { type: 'string', default: '3' },
      only: { type: 'string', default: KINDS.join(',') },
      systems: { type: 'string', default: SYSTEMS.join(',') },
      'no-peers': { type: 'boolean', default: false },
      events: { type: 'string', default: '50000' },
      'handler-events': { type: 'string', default: '20000' },
      'slow-peer-events': { type: 'string', default: '10000' },
      relays: { type: 'string', default: '1,4' },
      'handler-relays': { type: 'string', default: '1' },
      'batch-size': { type: 'string', default: '500' },
      concurrency: { type: 'string', default: '10' },
      rates: { type: 'string', default: '200,1000,5000' },
      'pgboss-rates': { type: 'string', default: '200' },
      'sql-producer-rates': { type: 'string', default: '1000,5000' },
      seconds: { type: 'string' },
      producers: { type: 'string' },
      'producer-async-commit': { type: 'boolean', default: false },
      'latency-history': { type: 'string', default: '50000' },
      'warmup-events': { type: 'string', default: '25000' },
      iterations: { type: 'string', default: '3000' },
    },
  });
  const rounds = positiveInt('rounds', values.rounds);
  const only = new Set(
    list(values.only).flatMap((k) => (k === 'drain' ? ['transport', 'handler'] : [k])),
  );
  for (const k of only)
    if (!(KINDS as readonly string[]).includes(k))
      throw new Error(`--only: unknown figure kind ${k} (${KINDS.join(', ')}, drain)`);
  const systems = new Set(list(values.systems));
  for (const s of systems)
    if (!(SYSTEMS as readonly string[]).includes(s))
      throw new Error(`--systems: unknown system ${s} (${SYSTEMS.join(', ')})`);
  if (values['no-peers']) {
    systems.delete('graphile');
    systems.delete('pgboss');
  }
  const has = (s: System) => systems.has(s);
  const events = positiveInt('events', values.events);
  const handlerEvents = positiveInt('handler-events', values['handler-events']);
  const slowPeerEvents = positiveInt('slow-peer-events', values['slow-peer-events']);
  const relayCounts = list(values.relays).map((r) => positiveInt('relays', r));
  const handlerRelays = list(values['handler-relays']).map((r) => positiveInt('relays', r));
  const batchSize = positiveInt('batch-size', values['batch-size']);
  const concurrency = positiveInt('concurrency', values.concurrency);
  const rates = list(values.rates).map((r) => positiveInt('rates', r));
  const pgbossRates = new Set(list(values['pgboss-rates']).map((r) => positiveInt('rates', r)));
  const sqlProducerRates = new Set(
    list(values['sql-producer-rates']).map((r) => positiveInt('sql-producer-rates', r)),
  );
  const seconds = values.seconds ? positiveInt('seconds', values.seconds) : undefined;
  const producers = values.producers ? positiveInt('producers', values.producers) : undefined;
  const iterations = positiveInt('iterations', values.iterations);
  const latencyHistory = wholeNumberOption('latency-history', values['latency-history']);
  const warmupEvents = wholeNumberOption('warmup-events', values['warmup-events']);

  if ((has('graphile') || has('pgboss')) && (only.has('handler') || only.has('latency')))
    ensurePeers();

  // The figures of one round, in their groups.
  const jobs: Job[] = [];
  const drain = (group: string, key: string, kind: DrainKind, relays: number, n: number) =>
    jobs.push({
      group,
      key,
      run: () => benchDrain({ kind, relays, events: n, batchSize, concurrency, warmupEvents }),
    });
  if (only.has('transport')) {
    for (const relays of relayCounts) {
      if (has('outboxkit')) {
        drain(
          'transport',
          `transport outboxkit deliver x${relays}`,
          'noop-delivery',
          relays,
          events,
        );
        drain(
          'transport',
          `transport outboxkit deliverBatch x${relays}`,
          'noop-deliver-batch',
          relays,
          events,
        );
      }
      if (has('bare'))
        drain('transport', `transport bare x${relays}`, 'bare-transport', relays, events);
    }
  }
  if (only.has('handler')) {
    for (const relays of handlerRelays) {
      if (has('outboxkit'))
        drain('handler', `handler outboxkit x${relays}`, 'noop-handler', relays, handlerEvents);
      if (has('bare'))
        drain('handler', `handler bare x${relays}`, 'bare-handler', relays, handlerEvents);
    }
    const peer = (system: 'graphile' | 'pgboss', setting: PeerLatencySetting) => {
      // One job per round trip: a smaller backlog keeps the round short (see README).
      const slow = system === 'graphile' && setting.batchSize <= 1;
      jobs.push({
        group: 'handler',
        key: `handler ${system} ${setting.setting}`,
        run: () =>
          benchPeerDrain({ system, setting, events: slow ? slowPeerEvents : handlerEvents }),
      });
    };
    if (has('graphile')) for (const s of GRAPHILE_DRAINS) peer('graphile', s);
    if (has('pgboss')) for (const s of PGBOSS_DRAINS) peer('pgboss', s);
  }
  if (only.has('latency')) {
    const latency = (rate: number, system: LatencySystem, statement?: 'sql') =>
      jobs.push({
        group: `latency@${rate}`,
        key: `latency ${system}${statement ? `-${statement}` : ''} ${rate}`,
        run: () =>
          benchLatency({
            system,
            rate,
            seconds: seconds ?? defaultSeconds(rate),
            warmupSeconds: 1,
            producers: producers ?? defaultProducers(rate),
            producerSynchronousCommit: values['producer-async-commit'] ? false : undefined,
            history: latencyHistory,
            producerStatement: statement,
          }),
      });
    for (const rate of rates) {
      for (const system of SYSTEMS) {
        if (!has(system)) continue;
        if (system === 'pgboss' && !pgbossRates.has(rate)) continue;
        latency(rate, system);
        // The relay fed by the bare producer's statement, where fire()'s producers fall
        // short of the rate (see ProducerOptions.statement).
        if (system === 'outboxkit' && sqlProducerRates.has(rate)) latency(rate, system, 'sql');
      }
    }
  }
  if (only.has('write') && has('outboxkit')) {
    jobs.push({
      group: 'write',
      key: 'write',
      run: () => benchWriteCost({ iterations, rounds: 10, warmup: 200 }),
    });
  }
  if (jobs.length === 0) throw new Error('--compare: nothing to run (see --only, --systems)');

  const commit = gitCommit();
  emit({
    bench: 'compare-start',
    commit,
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    rounds,
    figures: jobs.map((j) => j.key),
  });
  const groups = [...new Set(jobs.map((j) => j.group))];
  const results = new Map<string, (Figure | undefined)[]>();
  const started = performance.now();
  for (let r = 0; r < rounds; r++) {
    note(`\n=== round ${r + 1} of ${rounds} (${elapsed(started)}) ===`);
    setEmitContext({ round: r + 1 });
    for (const group of groups) {
      const inGroup = jobs.filter((j) => j.group === group);
      const order = inGroup.map((_, i) => inGroup[(i + r) % inGroup.length]);
      for (const job of order) {
        note(`[round ${r + 1}, ${elapsed(started)}] ${job.key} …`);
        let figure: Figure | undefined;
        try {
          figure = await job.run();
        } catch (error) {
          note(
            `!! ${job.key} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
          );
        }
        const row = results.get(job.key) ?? new Array<Figure | undefined>(rounds).fill(undefined);
        row[r] = figure;
        results.set(job.key, row);
      }
    }
  }
  setEmitContext({ round: undefined });
  const took = elapsed(started);
  note(`\ncompare: ${rounds} round(s) in ${took}, src/ at ${commit}`);
  const summary = report(results, rounds, commit, took);
  emit(summary);
}

/** `git rev-parse --short HEAD`, and `+dirty` when src/ has uncommitted changes (read-only). */
function gitCommit(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    // --no-optional-locks: never take the index lock a concurrent commit may need.
    const dirty = execFileSync(
      'git',
      ['--no-optional-locks', 'status', '--porcelain', '--', 'src'],
      { encoding: 'utf8' },
    ).trim();
    return dirty ? `${head}+dirty` : head;
  } catch {
    return 'unknown';
  }
}

function elapsed(startedMs: number): string {
  const s = Math.round((performance.now() - startedMs) / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** The median of the numbers present (the mean of the middle two for an even count). */
export function median(values: readonly (number | undefined)[]): number | undefined {
  const v = values.filter((x): x is number => x !== undefined && Number.isFinite(x));
  if (v.length === 0) return undefined;
  v.sort((a, b) => a - b);
  const mid = Math.floor(v.length / 2);
  return v.length % 2 === 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

type Metric = (figure: Figure) => number | undefined;

const eventsPerSecond: Metric = (f) => f.eventsPerSecond as number | undefined;
/** A drain's CPU per event: its relay (or bare) processes, or every postgres process. */
const cpuUsPerEvent =
  (of: 'client' | 'postgres'): Metric =>
  (f) =>
    f[of === 'client' ? 'clientCpuUsPerEvent' : 'postgresCpuUsPerEvent'] as number | undefined;
const latencyMs =
  (q: 'p50' | 'p90' | 'p99' | 'max'): Metric =>
  (f) =>
    (f.commitToStartMs as Record<string, number> | undefined)?.[q];
const writeMs =
  (v: 'none' | 'bare' | 'fire'): Metric =>
  (f) =>
    (f.p50Ms as Record<string, number> | undefined)?.[v];

interface Ratio {
  readonly label: string;
  /** Ratio of the medians over rounds. */
  readonly value: number | undefined;
  /** Each round's own ratio (its two figures were taken back to back). */
  readonly perRound: (number | undefined)[];
  readonly target?: string;
  readonly met?: boolean;
}

/** Print the tables on stderr and return the summary figure. */
function report(
  results: Map<string, (Figure | undefined)[]>,
  rounds: number,
  commit: string,
  took: string,
): Figure {
  const values = (key: string, metric: Metric): (number | undefined)[] =>
    (results.get(key) ?? []).map((f) => (f ? metric(f) : undefined));
  const med = (key: string, metric: Metric) => median(values(key, metric));
  const fmt = (v: number | undefined, digits = 0) =>
    v === undefined
      ? '–'
      : digits === 0
        ? Math.round(v).toLocaleString('en-US')
        : v.toFixed(digits);
  const perRoundText = (vs: (number | undefined)[], digits = 0) =>
    vs.map((v) => fmt(v, digits)).join(' / ');
  const lines: string[] = [];
  const table = (header: string[], rows: string[][]) => {
    lines.push(`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`);
    for (const r of rows) lines.push(`| ${r.join(' | ')} |`);
    lines.push('');
  };

  const medians: Record<string, Record<string, number | undefined>> = {};
  const drains = [...results.keys()].filter(
    (k) => k.startsWith('transport') || k.startsWith('handler'),
  );
  if (drains.length > 0) {
    lines.push(
      `Drains, events/s (median of ${rounds} round(s); each round's value), and the CPU per event (µs, medians) of the drain's own processes (client) and of every postgres process (none for the peers):`,
      '',
    );
    table(
      ['figure', 'events', 'median ev/s', 'per round', 'client CPU', 'postgres CPU'],
      drains.map((k) => {
        medians[k] = {
          eventsPerSecond: med(k, eventsPerSecond),
          clientCpuUsPerEvent: med(k, cpuUsPerEvent('client')),
          postgresCpuUsPerEvent: med(k, cpuUsPerEvent('postgres')),
        };
        const first = (results.get(k) ?? []).find((f) => f !== undefined);
        return [
          k,
          fmt(first?.events as number | undefined),
          fmt(medians[k].eventsPerSecond),
          perRoundText(values(k, eventsPerSecond)),
          fmt(medians[k].clientCpuUsPerEvent, 1),
          fmt(medians[k].postgresCpuUsPerEvent, 1),
        ];
      }),
    );
  }
  const latencies = [...results.keys()].filter((k) => k.startsWith('latency'));
  if (latencies.length > 0) {
    lines.push(
      'Commit → start latency, ms (medians over rounds of each run’s percentile; reached/s = the rate the producers achieved; late = events fired more than one interval behind schedule):',
      '',
    );
    table(
      [
        'figure',
        'producers',
        'reached/s',
        'p50',
        'p90',
        'p99',
        'max',
        'late',
        'p50 per round',
        'p99 per round',
      ],
      latencies.map((k) => {
        const m = {
          p50: med(k, latencyMs('p50')),
          p90: med(k, latencyMs('p90')),
          p99: med(k, latencyMs('p99')),
          max: med(k, latencyMs('max')),
          firedLate: med(k, (f) => f.firedLate as number | undefined),
          achievedPerSecond: med(k, (f) => f.achievedPerSecond as number | undefined),
        };
        medians[k] = m;
        const first = (results.get(k) ?? []).find((f) => f !== undefined);
        return [
          `${k}/s${first?.setting ? ` (${first.setting})` : ''}`,
          fmt(first?.producers as number | undefined),
          fmt(m.achievedPerSecond),
          fmt(m.p50, 2),
          fmt(m.p90, 2),
          fmt(m.p99, 2),
          fmt(m.max, 1),
          fmt(m.firedLate),
          perRoundText(values(k, latencyMs('p50')), 2),
          perRoundText(values(k, latencyMs('p99')), 2),
        ];
      }),
    );
  }
  if (results.has('write')) {
    const m = {
      none: med('write', writeMs('none')),
      bare: med('write', writeMs('bare')),
      fire: med('write', writeMs('fire')),
    };
    medians.write = m;
    lines.push('Write cost, ms per transaction (medians over rounds of each run’s median):', '');
    table(
      ['none', 'bare', 'fire', 'fire per round', 'bare per round'],
      [
        [
          fmt(m.none, 3),
          fmt(m.bare, 3),
          fmt(m.fire, 3),
          perRoundText(values('write', writeMs('fire')), 3),
          perRoundText(values('write', writeMs('bare')), 3),
        ],
      ],
    );
  }

  const ratios: Ratio[] = [];
  /** num/den, of the medians and round by round; left out unless both were taken. */
  const ratioOf = (
    label: string,
    n: (number | undefined)[],
    d: (number | undefined)[],
    target?: { readonly op: '≥' | '≤'; readonly value: number },
  ) => {
    const mn = median(n);
    const md = median(d);
    if (mn === undefined || md === undefined || md === 0) return;
    const value = mn / md;
    const perRound = n.map((x, i) => {
      const y = d[i];
      return x !== undefined && y !== undefined && y !== 0 ? x / y : undefined;
    });
    const met = target
      ? target.op === '≥'
        ? value >= target.value
        : value <= target.value
      : undefined;
    ratios.push({
      label,
      value,
      perRound,
      ...(target ? { target: `${target.op} ${target.value}`, met } : {}),
    });
  };
  const ratio = (
    label: string,
    num: string,
    den: string,
    metric: Metric,
    target?: { readonly op: '≥' | '≤'; readonly value: number },
  ) => ratioOf(label, values(num, metric), values(den, metric), target);

  const atLeast = (value: number) => ({ op: '≥', value }) as const;
  const relayCounts = [
    ...new Set(
      [...results.keys()]
        .map((k) => /^(?:transport|handler) .* x(\d+)$/.exec(k)?.[1])
        .filter((x): x is string => x !== undefined),
    ),
  ].sort((a, b) => Number(a) - Number(b));
  for (const x of relayCounts.map((n) => `x${n}`)) {
    for (const kind of ['deliver', 'deliverBatch']) {
      ratio(
        `transport ${kind} ${x} ours/bare`,
        `transport outboxkit ${kind} ${x}`,
        `transport bare ${x}`,
        eventsPerSecond,
        atLeast(0.8),
      );
    }
  }
  for (const x of relayCounts.map((n) => `x${n}`))
    ratio(
      `handler ${x} ours/bare`,
      `handler outboxkit ${x}`,
      `handler bare ${x}`,
      eventsPerSecond,
      atLeast(0.8),
    );
  ratio(
    'handler x1 ours/graphile default',
    'handler outboxkit x1',
    'handler graphile default',
    eventsPerSecond,
    atLeast(2),
  );
  for (const [system, settings] of [
    ['graphile', GRAPHILE_DRAINS.slice(1)],
    ['pgboss', PGBOSS_DRAINS],
  ] as const) {
    for (const s of settings) {
      ratio(
        `handler x1 ours/${system} ${s.setting}`,
        'handler outboxkit x1',
        `handler ${system} ${s.setting}`,
        eventsPerSecond,
      );
    }
  }
  const rates = [...new Set(latencies.map((k) => Number(k.split(' ')[2])))].sort((a, b) => a - b);
  for (const rate of rates) {
    for (const q of ['p50', 'p99'] as const) {
      // "no worse than graphile-worker's" at 200/s; reported at the other rates.
      const target = rate === 200 ? ({ op: '≤', value: 1 } as const) : undefined;
      ratio(
        `latency ${rate}/s ${q} ours/graphile`,
        `latency outboxkit ${rate}`,
        `latency graphile ${rate}`,
        latencyMs(q),
        target,
      );
      ratio(
        `latency ${rate}/s ${q} ours/bare`,
        `latency outboxkit ${rate}`,
        `latency bare ${rate}`,
        latencyMs(q),
      );
      ratio(
        `latency ${rate}/s ${q} ours (sql producers)/bare`,
        `latency outboxkit-sql ${rate}`,
        `latency bare ${rate}`,
        latencyMs(q),
      );
      ratio(
        `latency ${rate}/s ${q} ours (sql producers)/graphile`,
        `latency outboxkit-sql ${rate}`,
        `latency graphile ${rate}`,
        latencyMs(q),
      );
    }
  }
  if (results.has('write'))
    ratioOf(
      'write fire/bare (medians)',
      values('write', writeMs('fire')),
      values('write', writeMs('bare')),
      { op: '≤', value: 1.15 },
    );
  if (ratios.length > 0) {
    lines.push('Ratios (of the medians above; each round’s own ratio beside):', '');
    table(
      ['ratio', 'value', 'per round', 'target', 'met'],
      ratios.map((r) => [
        r.label,
        fmt(r.value, 3),
        perRoundText(r.perRound, 3),
        r.target ?? '(reported)',
        r.met === undefined ? '' : r.met ? 'yes' : '**no**',
      ]),
    );
  }
  process.stderr.write(`\n${lines.join('\n')}\n`);
  return {
    bench: 'compare',
    commit,
    rounds,
    took,
    medians,
    ratios: ratios.map((r) => ({
      ...r,
      value: r.value === undefined ? null : round(r.value),
      perRound: r.perRound.map((v) => (v === undefined ? null : round(v))),
    })),
  };
}
