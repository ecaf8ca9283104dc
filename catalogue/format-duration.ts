/** Seconds as the largest units that add up: `2d`, `1h 30m`, `90s` → `1m 30s`, `0.5s`. */
export function formatDuration(seconds: number): string {
  const parts: string[] = [];
  let rest = seconds;
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
  ] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) parts.push(`${n}${unit}`);
    rest -= n * size;
  }
  if (rest > 0 || parts.length === 0) parts.push(`${Math.round(rest * 1000) / 1000}s`);
  return parts.join(' ');
}
