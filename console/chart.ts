/**
 * The backlog chart: an inline SVG of the owed and dead counts over the last hour. Inline
 * SVG rather than a chart library: nothing to load, nothing a Content-Security-Policy has
 * to let in, and it prints. Colours are presentation attributes and classes of the
 * console's stylesheet, never `style` attributes (the CSP admits no inline style).
 */
import { html, type SafeHtml } from './html.js';
import { type BacklogSample, SAMPLE_WINDOW_MS } from './sampler.js';

const WIDTH = 720;
const HEIGHT = 160;
const PAD = { left: 44, right: 8, top: 10, bottom: 22 };

/** The chart of `samples` over the hour before `now`. */
export function backlogChart(samples: readonly BacklogSample[], now: number): SafeHtml {
  const from = now - SAMPLE_WINDOW_MS;
  const max = Math.max(1, ...samples.map((s) => Math.max(s.owed, s.dead)));
  const x = (at: number) =>
    (PAD.left + ((at - from) / SAMPLE_WINDOW_MS) * (WIDTH - PAD.left - PAD.right)).toFixed(1);
  const y = (n: number) => (PAD.top + (1 - n / max) * (HEIGHT - PAD.top - PAD.bottom)).toFixed(1);
  const line = (pick: (s: BacklogSample) => number) =>
    samples.map((s) => `${x(s.at)},${y(pick(s))}`).join(' ');
  const minutes = [60, 45, 30, 15, 0];
  const label =
    samples.length === 0
      ? 'no samples yet'
      : `${samples.length} sample${samples.length === 1 ? '' : 's'}, max owed ${Math.max(...samples.map((s) => s.owed))}, max dead ${Math.max(...samples.map((s) => s.dead))}`;
  return html`<figure class="chart">
  <svg viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="backlog over the last hour: ${label}">
    <line class="axis" x1="${PAD.left}" y1="${HEIGHT - PAD.bottom}" x2="${WIDTH - PAD.right}" y2="${HEIGHT - PAD.bottom}" stroke="#999" />
    <line class="axis" x1="${PAD.left}" y1="${PAD.top}" x2="${PAD.left}" y2="${HEIGHT - PAD.bottom}" stroke="#999" />
    <text x="${PAD.left - 4}" y="${PAD.top + 8}" text-anchor="end" font-size="10">${max}</text>
    <text x="${PAD.left - 4}" y="${HEIGHT - PAD.bottom}" text-anchor="end" font-size="10">0</text>
    ${minutes.map((m) => html`<text x="${x(now - m * 60_000)}" y="${HEIGHT - 6}" text-anchor="middle" font-size="10">${m === 0 ? 'now' : `-${m}m`}</text>`)}
    ${samples.length > 0 ? html`<polyline class="owed" fill="none" stroke="#1f6feb" stroke-width="2" points="${line((s) => s.owed)}" />` : ''}
    ${samples.length > 0 ? html`<polyline class="dead" fill="none" stroke="#cf222e" stroke-width="2" points="${line((s) => s.dead)}" />` : ''}
    ${samples.length <= 240 ? samples.map((s) => html`<circle cx="${x(s.at)}" cy="${y(s.owed)}" r="2.5" fill="#1f6feb" /><circle cx="${x(s.at)}" cy="${y(s.dead)}" r="2.5" fill="#cf222e" />`) : ''}
  </svg>
  <figcaption><span class="key owed">owed</span> <span class="key dead">dead</span> over the last hour, sampled by this console: ${label}</figcaption>
</figure>`;
}
