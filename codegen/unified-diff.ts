/** One line of an edit script: kept, removed from the old text, or added by the new one. */
interface Edit {
  readonly op: ' ' | '-' | '+';
  readonly line: string;
  readonly oldNo: number;
  readonly newNo: number;
}

/** Beyond this many differing lines, print the changed region whole instead of searching. */
const MAX_EDIT_DISTANCE = 2000;

/**
 * A unified diff (`--- old`, `+++ new`, `@@` hunks with three lines of context) of two
 * texts, the way `git diff` shows it, so `codegen --check` tells a person exactly which
 * lines are stale. Empty when the texts are equal.
 *
 * Myers' O(ND) algorithm after trimming the common head and tail, which is where the
 * unchanged bulk of a regenerated file is.
 */
export function unifiedDiff(
  oldText: string,
  newText: string,
  oldLabel: string,
  newLabel: string,
  context = 3,
): string {
  if (oldText === newText) return '';
  const a = splitLines(oldText);
  const b = splitLines(newText);
  const edits = diffLines(a, b);
  const out = [`--- ${oldLabel}`, `+++ ${newLabel}`];
  let i = 0;
  while (i < edits.length) {
    if (edits[i].op === ' ') {
      i++;
      continue;
    }
    // A hunk: from `context` lines before this change to `context` after the last change
    // that is within 2 × context of the previous one.
    const start = Math.max(0, i - context);
    let end = i;
    let lastChange = i;
    while (end < edits.length && end - lastChange <= 2 * context) {
      if (edits[end].op !== ' ') lastChange = end;
      end++;
    }
    end = Math.min(edits.length, lastChange + context + 1);
    const hunk = edits.slice(start, end);
    const oldCount = hunk.filter((e) => e.op !== '+').length;
    const newCount = hunk.filter((e) => e.op !== '-').length;
    const oldStart = hunk[0].oldNo + (oldCount === 0 ? 0 : 1);
    const newStart = hunk[0].newNo + (newCount === 0 ? 0 : 1);
    out.push(`@@ -${oldStart},${oldCount} +${newStart},${newCount} @@`);
    for (const e of hunk) out.push(`${e.op}${e.line}`);
    i = end;
  }
  return `${out.join('\n')}\n`;
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  else lines[lines.length - 1] += '\n\\ No newline at end of file';
  return lines;
}

/** The edit script turning `a` into `b`; `oldNo`/`newNo` count lines consumed before it. */
function diffLines(a: string[], b: string[]): Edit[] {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  ) {
    tail++;
  }
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  const edits: Edit[] = [];
  let oldNo = 0;
  let newNo = 0;
  const push = (op: Edit['op'], line: string) => {
    edits.push({ op, line, oldNo, newNo });
    if (op !== '+') oldNo++;
    if (op !== '-') newNo++;
  };
  for (let k = 0; k < head; k++) push(' ', a[k]);
  for (const [op, line] of myers(midA, midB)) push(op, line);
  for (let k = a.length - tail; k < a.length; k++) push(' ', a[k]);
  return edits;
}

function myers(a: string[], b: string[]): [Edit['op'], string][] {
  const n = a.length;
  const m = b.length;
  if (n === 0) return b.map((line) => ['+', line]);
  if (m === 0) return a.map((line) => ['-', line]);
  const max = n + m;
  const offset = max + 1;
  const v = new Int32Array(2 * max + 4);
  const trace: Int32Array[] = [];
  let found = false;
  for (let d = 0; d <= max && d <= MAX_EDIT_DISTANCE; d++) {
    trace.push(v.slice(offset - d - 1, offset + d + 2));
    for (let k = -d; k <= d; k += 2) {
      let x =
        k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1])
          ? v[offset + k + 1]
          : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = true;
        break;
      }
    }
    if (found) break;
  }
  if (!found)
    return [
      ...a.map((l): [Edit['op'], string] => ['-', l]),
      ...b.map((l): [Edit['op'], string] => ['+', l]),
    ];
  // Walk the trace back from (n, m) to (0, 0).
  const script: [Edit['op'], string][] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d >= 0; d--) {
    const snapshot = trace[d];
    const at = (k: number) => snapshot[k + d + 1];
    const k = x - y;
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1;
    const prevX = d === 0 ? 0 : at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      script.push([' ', a[x - 1]]);
      x--;
      y--;
    }
    if (d > 0) {
      if (x === prevX) script.push(['+', b[y - 1]]);
      else script.push(['-', a[x - 1]]);
    }
    x = prevX;
    y = prevY;
  }
  return script.reverse();
}
