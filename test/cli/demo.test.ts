import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from './support/in-process.js';

describe('outbox demo', () => {
  it('runs the shop from nothing, exits 0 and deletes its database', async () => {
    const result = await runCliInProcess(['demo'], { timeoutMs: 80_000 });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('none delivered: no order row, no event, no payment, no mail');
    expect(result.stdout).toMatch(/dead +1 {2}dead letters/);
    const database = /^database: (.+)$/m.exec(result.stdout)?.[1];
    expect(database).toBeDefined();
    expect(existsSync(dirname(database!))).toBe(false);
    // stderr is a pipe here, not a terminal: progress comes as plain lines, never redrawn.
    expect(result.stderr).not.toContain('\r');
    expect(result.stderr.trimEnd().split('\n').at(-1)).toMatch(/^ {3}relay: 1191 delivered · /);
  }, 90_000);
});
