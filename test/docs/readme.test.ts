/**
 * The README is the front door: the two set-up commands first, then what it is, a short
 * tour and links to the guides, under 250 lines. What does not fit goes into a guide in
 * docs/ and is linked (links.test.ts checks every guide is).
 */
import { describe, expect, it } from 'vitest';
import { codeBlocks, read } from './support/markdown.js';

describe('the README', () => {
  const text = read('README.md');

  it('stays under 250 lines', () => {
    expect(text.trimEnd().split('\n').length).toBeLessThan(250);
  });

  it('opens with the two commands: the demo on embedded SQLite, and the tests', () => {
    const [first] = codeBlocks('README.md');
    expect(first.lang).toBe('sh');
    expect(first.code).toContain('npm install && npx outbox demo');
    expect(first.code).toContain('npm test');
    expect(text.indexOf('```sh')).toBeLessThan(text.indexOf('\n## '));
  });
});
