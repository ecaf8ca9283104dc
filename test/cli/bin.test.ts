import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from './support/cli.js';

/**
 * The other CLI tests run the command from source; this one checks the wiring users get:
 * `npx outbox` at the repo root runs bin/outbox.js, which runs the CLI `npm install`
 * compiled into dist/ (the `prepare` script).
 */
describe('npx outbox', () => {
  it('runs the compiled CLI and lists its commands', () => {
    const compiled = join(REPO, 'dist/cli/main.js');
    expect(existsSync(compiled), `${compiled} is missing: run npm run build`).toBe(true);
    const result = spawnSync('npx', ['outbox', '--help'], { cwd: REPO, encoding: 'utf8' });
    expect(result.status).toBe(0);
    for (const command of ['migrate', 'relay', 'demo', 'codegen', 'catalogue']) {
      expect(result.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    }
  });
});
