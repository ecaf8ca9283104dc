import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type CheckBase, resolveCheckBase } from '../../codegen/check-base.js';
import { commitAll, git, originWithMain, tempDir, writeFiles } from './git-repos.js';

/** No CI variables: each test sets the ones it is about. */
const NO_CI = {};

const short = (sha: string) => sha.slice(0, 7);

function found(base: CheckBase) {
  if (base.kind !== 'found') throw new Error(`expected a base, got ${JSON.stringify(base)}`);
  return base;
}

function none(base: CheckBase): string {
  if (base.kind !== 'none') throw new Error(`expected no base, got ${JSON.stringify(base)}`);
  return base.reason;
}

describe('the base codegen --check compares the catalogue with', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
    vi.unstubAllEnvs();
  });
  const temp = () => {
    const t = tempDir('outbox-check-base-');
    cleanups.push(t.cleanup);
    return t.dir;
  };

  /** origin with main at `first`; a clone on branch `feature` with one commit of its own; main then moves on. */
  function branchOffMain() {
    const root = temp();
    const { origin, upstream, first } = originWithMain(root, (d) =>
      writeFiles(d, { 'a.txt': 'a\n' }),
    );
    const clone = join(root, 'clone');
    git(root, 'clone', '-q', origin, clone);
    git(clone, 'checkout', '-q', '-b', 'feature');
    writeFiles(clone, { 'b.txt': 'b\n' });
    const feature = commitAll(clone, 'feature work');
    writeFiles(upstream, { 'c.txt': 'c\n' });
    commitAll(upstream, 'main moves on');
    git(upstream, 'push', '-q', 'origin', 'HEAD:refs/heads/main');
    git(clone, 'fetch', '-q', 'origin');
    return { root, origin, upstream, clone, first, feature };
  }

  it("on a branch, is the merge-base with origin/HEAD's branch, not that branch's tip", () => {
    const { clone, first } = branchOffMain();
    const base = found(resolveCheckBase({ cwd: clone, env: NO_CI }));
    expect(base).toEqual({
      kind: 'found',
      source: 'merge-base',
      commit: first,
      description: `the merge-base of HEAD and origin/main (${short(first)})`,
      path: undefined,
    });
  });

  it('without origin/HEAD (a CI checkout that only fetched), falls back to origin/main', () => {
    const { clone, first } = branchOffMain();
    git(clone, 'remote', 'set-head', 'origin', '--delete');
    const base = found(resolveCheckBase({ cwd: clone, env: NO_CI }));
    expect(base.commit).toBe(first);
    expect(base.description).toBe(`the merge-base of HEAD and origin/main (${short(first)})`);
  });

  it('falls back to origin/master when there is no origin/main', () => {
    const { clone, first } = branchOffMain();
    git(clone, 'remote', 'set-head', 'origin', '--delete');
    git(clone, 'update-ref', 'refs/remotes/origin/master', 'refs/remotes/origin/main');
    git(clone, 'update-ref', '-d', 'refs/remotes/origin/main');
    expect(found(resolveCheckBase({ cwd: clone, env: NO_CI })).description).toBe(
      `the merge-base of HEAD and origin/master (${short(first)})`,
    );
  });

  it("a pull request's target branch (GITHUB_BASE_REF) wins over the default branch", () => {
    const { clone, feature } = branchOffMain();
    // release/1 branches off the feature commit: its merge-base with HEAD is HEAD's parent.
    git(clone, 'push', '-q', 'origin', 'HEAD:refs/heads/release/1');
    git(clone, 'fetch', '-q', 'origin');
    writeFiles(clone, { 'd.txt': 'd\n' });
    commitAll(clone, 'more feature work');
    const github = found(resolveCheckBase({ cwd: clone, env: { GITHUB_BASE_REF: 'release/1' } }));
    expect(github.description).toBe(
      `the merge-base of HEAD and origin/release/1 (${short(feature)})`,
    );
    const gitlab = found(
      resolveCheckBase({
        cwd: clone,
        env: { CI_MERGE_REQUEST_TARGET_BRANCH_NAME: 'release/1', CI_DEFAULT_BRANCH: 'main' },
      }),
    );
    expect(gitlab.commit).toBe(feature);
  });

  it('on the default branch itself (after a merge), is the previous commit HEAD~1, and says so', () => {
    const { clone, upstream } = branchOffMain();
    const previous = git(upstream, 'rev-parse', 'HEAD');
    git(clone, 'checkout', '-q', 'main');
    git(clone, 'merge', '-q', '--ff-only', 'origin/main');
    git(clone, 'merge', '-q', '--no-ff', '--no-edit', 'feature');
    git(clone, 'push', '-q', 'origin', 'main');
    expect(found(resolveCheckBase({ cwd: clone, env: NO_CI }))).toEqual({
      kind: 'found',
      source: 'previous-commit',
      commit: previous,
      description: `the previous commit HEAD~1 (${short(previous)}), as HEAD is on origin/main`,
      path: undefined,
    });
  });

  it('on the first commit of the default branch there is no base, and it says why', () => {
    const root = temp();
    const { origin } = originWithMain(root, (d) => writeFiles(d, { 'a.txt': 'a\n' }));
    git(root, 'clone', '-q', origin, join(root, 'clone'));
    expect(none(resolveCheckBase({ cwd: join(root, 'clone'), env: NO_CI }))).toBe(
      'HEAD is on origin/main and is its first commit: there is no earlier catalogue',
    );
  });

  it("a shallow clone of a branch (actions/checkout's default) has no base and says to fetch the full history", () => {
    const { root, origin } = branchOffMain();
    git(join(root, 'clone'), 'push', '-q', 'origin', 'feature');
    const shallow = join(root, 'shallow');
    git(root, 'clone', '-q', '--depth', '1', '--branch', 'feature', `file://${origin}`, shallow);
    const reason = none(
      resolveCheckBase({ cwd: shallow, env: { GITHUB_BASE_REF: 'main', CI: 'true' } }),
    );
    expect(reason).toMatch(
      /^no upstream default branch in this clone \(tried origin\/main, .*\) \(this is a shallow clone\); /,
    );
    expect(reason).toContain('actions/checkout with fetch-depth: 0');
    expect(reason).toContain('GIT_DEPTH: 0');
  });

  it('a shallow clone that has the default branch but not the fork point has no base', () => {
    const { root, origin } = branchOffMain();
    git(join(root, 'clone'), 'push', '-q', 'origin', 'feature');
    const shallow = join(root, 'shallow');
    git(root, 'clone', '-q', '--depth', '1', '--no-single-branch', `file://${origin}`, shallow);
    git(shallow, 'checkout', '-q', 'feature');
    expect(none(resolveCheckBase({ cwd: shallow, env: NO_CI }))).toMatch(
      /^HEAD and origin\/main share no commit in this clone \(this is a shallow clone\); fetch the full history/,
    );
  });

  it('a shallow clone of the default branch has no previous commit to compare with', () => {
    const { root, origin } = branchOffMain();
    const shallow = join(root, 'shallow');
    git(root, 'clone', '-q', '--depth', '1', `file://${origin}`, shallow);
    expect(none(resolveCheckBase({ cwd: shallow, env: NO_CI }))).toMatch(
      /^HEAD is on origin\/main and its previous commit is not in this shallow clone; fetch the full history/,
    );
  });

  it('a checkout with no origin remote (a local clone, this repository in CI) has no base', () => {
    const dir = temp();
    git(dir, 'init', '-q');
    commitAll(dir, 'first');
    commitAll(dir, 'second');
    expect(none(resolveCheckBase({ cwd: dir, env: NO_CI }))).toMatch(
      /^no upstream default branch in this clone \(tried origin\/HEAD, origin\/main, origin\/master\); /,
    );
  });

  it('a repository without a commit has no base', () => {
    const dir = temp();
    git(dir, 'init', '-q');
    expect(none(resolveCheckBase({ cwd: dir, env: NO_CI }))).toBe(
      'the repository has no commit yet',
    );
  });

  it('outside a git checkout, and without git at all, there is no base', () => {
    const dir = temp();
    vi.stubEnv('GIT_CEILING_DIRECTORIES', dir.slice(0, dir.lastIndexOf('/')) || '/');
    expect(none(resolveCheckBase({ cwd: dir, env: NO_CI }))).toBe('not a git checkout');
    vi.stubEnv('PATH', join(dir, 'no-bin'));
    expect(none(resolveCheckBase({ cwd: dir, env: NO_CI }))).toBe('git is not installed');
  });

  it('an explicit --base wins over the merge-base, with or without a path', () => {
    const { clone, feature } = branchOffMain();
    expect(found(resolveCheckBase({ cwd: clone, base: 'HEAD', env: NO_CI }))).toEqual({
      kind: 'found',
      source: 'explicit',
      commit: feature,
      description: `--base HEAD (${short(feature)})`,
      path: undefined,
    });
    expect(
      found(resolveCheckBase({ cwd: clone, base: 'HEAD:old/catalogue.json', env: NO_CI })).path,
    ).toBe('old/catalogue.json');
  });

  it('an explicit --base that is not a commit is refused, naming it', () => {
    const { clone } = branchOffMain();
    const base = resolveCheckBase({ cwd: clone, base: 'origin/nope', env: NO_CI });
    expect(base.kind).toBe('invalid');
    if (base.kind !== 'invalid') return;
    expect(base.message).toMatch(/^--base origin\/nope: origin\/nope is not a commit here/);
  });
});
