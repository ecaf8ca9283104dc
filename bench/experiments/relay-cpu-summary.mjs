/**
 * Summarise a .cpuprofile: self time by function and by file (sample counts times the mean
 * interval), over all samples or those of the last `--last-s` seconds.
 *   node bench/experiments/relay-cpu-summary.mjs /tmp/x.cpuprofile [--top 40] [--last-s 3] [--by-gap 1]
 */
import { readFileSync } from 'node:fs';

const [file, ...rest] = process.argv.slice(2);
const opt = (n, d) => {
  const i = rest.indexOf(`--${n}`);
  return i >= 0 ? Number(rest[i + 1]) : d;
};
const top = opt('top', 40);
const p = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
// Keep samples from the last `--last-s` seconds, default all.
const lastS = opt('last-s', 0);
let t = p.startTime;
const times = p.timeDeltas.map((d) => (t += d));
const end = p.endTime;
const from = lastS > 0 ? end - lastS * 1e6 : Number.NEGATIVE_INFINITY;
const byGap = opt('by-gap', 0) === 1;
const meanUs = (end - p.startTime) / p.samples.length;
const selfFn = new Map();
const selfFile = new Map();
let totalUs = 0;
for (let i = 0; i < p.samples.length; i++) {
  if (times[i] < from) continue;
  // By default each sample counts as the mean interval (samples, not the gaps between
  // them: on a loaded machine a late sample would charge its whole gap to one function);
  // `--by-gap 1` charges each sample the time to the next instead.
  const dt = byGap ? (i + 1 < times.length ? times[i + 1] - times[i] : 0) : meanUs;
  const n = byId.get(p.samples[i]);
  const cf = n.callFrame;
  const f = cf.url.replace(/^file:\/\/.*?\/(node_modules|dist)\//, '$1/') || '(native)';
  const key = `${cf.functionName || '(anon)'} ${f}:${cf.lineNumber + 1}`;
  selfFn.set(key, (selfFn.get(key) ?? 0) + dt);
  const fk = f.startsWith('node_modules/')
    ? f.split('/').slice(0, 2).join('/') + ' …' + f.split('/').pop()
    : f;
  selfFile.set(fk, (selfFile.get(fk) ?? 0) + dt);
  totalUs += dt;
}
const show = (m, title) => {
  console.log(`\n== ${title} (total ${(totalUs / 1000).toFixed(0)} ms)`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(
      `${((100 * v) / totalUs).toFixed(1).padStart(5)}% ${(v / 1000).toFixed(0).padStart(6)} ms  ${k}`,
    );
};
show(selfFile, 'self time by file');
show(selfFn, 'self time by function');
