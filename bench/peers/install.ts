/**
 * The peers are a bench-only package (this folder's package.json and lock), so the root's
 * `npm ci` stays lean: they are installed here, on first use, only when a peer figure is
 * asked for (`npm ci --prefix bench/peers`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { note } from '../common.js';

export const PEERS_DIR = fileURLToPath(new URL('.', import.meta.url));

/** Both peers are in bench/peers/node_modules. */
export function peersInstalled(): boolean {
  return ['graphile-worker', 'pg-boss'].every((p) =>
    existsSync(join(PEERS_DIR, 'node_modules', p, 'package.json')),
  );
}

/** Install the peers from their lock if they are missing (output on stderr). */
export function ensurePeers(): void {
  if (peersInstalled()) return;
  note('peers: bench/peers/node_modules missing, running npm ci --prefix bench/peers …');
  // npm's output goes to stderr too: stdout stays one JSON line per figure.
  execFileSync('npm', ['ci', '--prefix', PEERS_DIR, '--no-audit', '--no-fund'], {
    stdio: ['ignore', 2, 2],
  });
  if (!peersInstalled()) throw new Error('peers: npm ci --prefix bench/peers did not install them');
}
