import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * Git in a temp repository, isolated from the machine's and the caller's git settings: a
 * fixed identity, no signing, no hooks, `main` as the first branch, and no `GIT_*`
 * variables inherited (a test run from a git hook must not touch the outer repository).
 */
export function git(cwd: string, ...args: string[]): string {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('GIT_')),
  );
  return execFileSync(
    'git',
    [
      '-c',
      'user.email=ci@example.com',
      '-c',
      'user.name=ci',
      '-c',
      'commit.gpgsign=false',
      '-c',
      'init.defaultBranch=main',
      '-c',
      'core.hooksPath=/dev/null',
      '-c',
      'advice.detachedHead=false',
      ...args,
    ],
    {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
    },
  ).trim();
}

/** A temp directory removed by the returned `cleanup`. */
export function tempDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Write files (paths relative to `dir`), creating folders. */
export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

/** Stage everything and commit; returns the new commit's sha. */
export function commitAll(cwd: string, message: string): string {
  git(cwd, 'add', '-A');
  git(cwd, 'commit', '-q', '--allow-empty', '-m', message);
  return git(cwd, 'rev-parse', 'HEAD');
}

/**
 * A bare `origin.git` under `root` whose `main` holds one commit made by `seed` (in a
 * working repository `root/seed`, which stays around to push later commits from).
 * @returns the paths, and the sha of the first commit on main.
 */
export function originWithMain(
  root: string,
  seed: (dir: string) => void,
): { origin: string; upstream: string; first: string } {
  const origin = join(root, 'origin.git');
  const upstream = join(root, 'seed');
  git(root, 'init', '-q', '--bare', origin);
  git(root, 'init', '-q', upstream);
  seed(upstream);
  const first = commitAll(upstream, 'first');
  git(upstream, 'remote', 'add', 'origin', origin);
  git(upstream, 'push', '-q', 'origin', 'HEAD:refs/heads/main');
  return { origin, upstream, first };
}
