/**
 * The documents the docs site is built from (README.md and docs/*.md), read the way the
 * docs tests need them: their fenced code blocks, with the marker comment before each, and
 * the anchors of their headings, as GitHub and TypeDoc make them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..', '..');

/** README.md and every docs/*.md, as paths relative to the repository. */
export function documents(): string[] {
  const guides = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...guides];
}

export function read(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

/** One fenced code block. */
export interface CodeBlock {
  /** The document, relative to the repository. */
  readonly file: string;
  /** The 1-based line of the block's first line of code (the one after the fence). */
  readonly line: number;
  /** The info string after the fence: `ts`, `sh`, `text` … */
  readonly lang: string;
  readonly code: string;
  /** `partial` when the block is preceded by `<!-- snippet: partial -->`. */
  readonly marker: string | undefined;
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/;
const MARKER = /^<!--\s*snippet:\s*([\w-]+)\b.*-->\s*$/;

export function codeBlocks(file: string): CodeBlock[] {
  const lines = read(file).split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, lang] = open;
    let end = i + 1;
    while (end < lines.length && !lines[end].trimStart().startsWith(fence)) end++;
    let before = i - 1;
    while (before >= 0 && lines[before].trim() === '') before--;
    const marker = before >= 0 ? MARKER.exec(lines[before].trim())?.[1] : undefined;
    const code = lines
      .slice(i + 1, end)
      .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
      .join('\n');
    blocks.push({ file, line: i + 2, lang, code, marker });
    i = end;
  }
  return blocks;
}

/** The text of a document with its code blocks blanked out (links inside code are not links). */
export function prose(file: string): string {
  const lines = read(file).split('\n');
  let fence: string | undefined;
  return lines
    .map((line) => {
      const open = FENCE.exec(line);
      if (fence === undefined && open) {
        fence = open[2];
        return '';
      }
      if (fence !== undefined) {
        if (line.trimStart().startsWith(fence)) fence = undefined;
        return '';
      }
      return line;
    })
    .join('\n');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .replace(/<[^>]+>/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a document's headings (a repeated heading gets `-1`, `-2` …). */
export function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const line of prose(file).split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    result.add(n === 0 ? base : `${base}-${n}`);
  }
  return result;
}

export function relativeToRoot(path: string): string {
  return relative(ROOT, path);
}
