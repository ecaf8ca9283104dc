/**
 * Every relative link of README.md and docs/*.md reaches a file that exists, and every
 * `#anchor` a heading of the page it names (GitHub's anchors). A link to a folder is
 * refused: GitHub shows one, but the docs site (TypeDoc) copies files only, so name a file
 * in it (its `index.ts`, its README).
 */
import { existsSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchors, documents, prose, ROOT } from './support/markdown.js';

interface Link {
  readonly file: string;
  readonly line: number;
  readonly target: string;
}

const INLINE = /\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
const REFERENCE = /^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/;

function links(file: string): Link[] {
  const found: Link[] = [];
  prose(file)
    .split('\n')
    .forEach((text, index) => {
      const line = text.replace(/`[^`]*`/g, '');
      for (const m of line.matchAll(INLINE)) found.push({ file, line: index + 1, target: m[1] });
      const ref = REFERENCE.exec(line);
      if (ref) found.push({ file, line: index + 1, target: ref[1] });
    });
  return found.filter((l) => !/^[a-z][a-z0-9+.-]*:/i.test(l.target));
}

function problem(link: Link): string | undefined {
  const [path, anchor] = link.target.split('#', 2) as [string, string | undefined];
  const absolute = path === '' ? join(ROOT, link.file) : join(ROOT, dirname(link.file), path);
  const where = `${link.file}:${link.line}: ${link.target}`;
  if (relative(ROOT, absolute).startsWith('..')) return `${where} leaves the repository`;
  if (!existsSync(absolute)) return `${where}: no such file`;
  if (statSync(absolute).isDirectory()) return `${where} is a folder: link a file in it`;
  if (anchor !== undefined && absolute.endsWith('.md')) {
    const page = relative(ROOT, absolute);
    if (!anchors(page).has(decodeURIComponent(anchor))) {
      return `${where}: ${page} has no heading #${anchor}`;
    }
  }
  return undefined;
}

describe('the links of README.md and docs/*.md', () => {
  const all = documents().flatMap(links);

  it('finds the links (the check is not vacuous)', () => {
    expect(all.length).toBeGreaterThan(30);
  });

  it('every relative link reaches a file, and every anchor a heading of its page', () => {
    expect(all.map(problem).filter((p) => p !== undefined)).toEqual([]);
  });

  it('every guide in docs/ is linked from the README', () => {
    const fromReadme = new Set(
      links('README.md').map((l) => l.target.split('#')[0].replace(/^\.\//, '')),
    );
    const guides = documents().filter((d) => d !== 'README.md');
    expect(guides.filter((g) => !fromReadme.has(g))).toEqual([]);
  });
});
