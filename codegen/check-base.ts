import { execFileSync } from 'node:child_process';
import { parseCatalogue } from '../catalogue/read-catalogue.js';
import type { Catalogue } from '../src/introspect/index.js';

/**
 * The commit `codegen --check` compares the catalogue with, or why there is none.
 *
 * - `found`: `commit` is a full sha; `description` names it for output, with how it was
 *   chosen and its short sha: `the merge-base of HEAD and origin/main (1a2b3c4)`.
 * - `none`: no base could be found; `reason` says why and how to get one. The check then
 *   only compares the generated files with the config, and says so.
 * - `invalid`: an explicit `--base` does not name a commit: a usage error.
 */
export type CheckBase =
  | {
      readonly kind: 'found';
      readonly source: 'explicit' | 'merge-base' | 'previous-commit';
      readonly commit: string;
      readonly description: string;
      /** The catalogue's path inside the commit, when `--base REF:PATH` named it. */
      readonly path: string | undefined;
    }
  | { readonly kind: 'none'; readonly reason: string }
  | { readonly kind: 'invalid'; readonly message: string };

/** Options of {@link resolveCheckBase}. */
export interface ResolveCheckBaseOptions {
  /** `--base REF` or `--base REF:PATH`: wins over everything else. */
  readonly base?: string;
  /** Where git runs: inside the checkout. */
  readonly cwd: string;
  /**
   * Where the CI variables naming the target branch are read (`GITHUB_BASE_REF`,
   * `CI_MERGE_REQUEST_TARGET_BRANCH_NAME`, `CI_DEFAULT_BRANCH`).
   * @defaultValue `process.env`
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** The remote whose default branch a branch is compared with. */
const REMOTE = 'origin';

/** How to get a base in CI, appended to every "no base" reason. */
const FETCH_HINT =
  'fetch the full history and the default branch (GitHub Actions: actions/checkout with fetch-depth: 0; GitLab CI: GIT_DEPTH: 0 and git fetch origin "$CI_DEFAULT_BRANCH") or pass --base REF';

/**
 * Choose what `codegen --check` compares the catalogue with, so that the common CI case
 * needs no flag, in this order:
 *
 * 1. `--base REF` (or `REF:PATH`), as given.
 * 2. In a git checkout, the merge-base of `HEAD` and the upstream default branch: the first
 *    of `origin/$GITHUB_BASE_REF` / `origin/$CI_MERGE_REQUEST_TARGET_BRANCH_NAME` (a pull
 *    or merge request's target), `origin/HEAD`'s target, `origin/$CI_DEFAULT_BRANCH`,
 *    `origin/main`, `origin/master` that exists. That is the catalogue the branch started
 *    from, so a breaking change committed on the branch is caught.
 * 3. When `HEAD` has no commits of its own (CI on the default branch itself, after a
 *    merge), the previous commit `HEAD~1`: what the merge changed. The break should have
 *    failed on its branch; this catches one pushed straight to the default branch.
 *
 * Otherwise `none`, with the reason: not a git checkout, no commit, no upstream branch in
 * this clone, or a shallow clone without the commits needed. Runs only git commands that
 * read (`rev-parse`, `symbolic-ref`, `merge-base`); never fetches and never throws.
 */
export function resolveCheckBase(options: ResolveCheckBaseOptions): CheckBase {
  const { cwd } = options;
  const env = options.env ?? process.env;

  if (options.base !== undefined) {
    const colon = options.base.indexOf(':');
    const ref = colon < 0 ? options.base : options.base.slice(0, colon);
    const path = colon < 0 ? undefined : options.base.slice(colon + 1);
    const commit = git(cwd, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
    if (!commit.ok) {
      return {
        kind: 'invalid',
        message: `--base ${options.base}: ${ref} is not a commit here (${commit.missing ? 'git is not installed' : commit.stderr || 'git rev-parse found nothing'}); pass a branch, tag or sha this clone has (git fetch it first)`,
      };
    }
    return {
      kind: 'found',
      source: 'explicit',
      commit: commit.out,
      description: `--base ${options.base} (${short(commit.out)})`,
      path,
    };
  }

  const inside = git(cwd, ['rev-parse', '--is-inside-work-tree']);
  if (!inside.ok || inside.out !== 'true') {
    return {
      kind: 'none',
      reason: inside.ok || !inside.missing ? 'not a git checkout' : 'git is not installed',
    };
  }
  const head = git(cwd, ['rev-parse', '--verify', '--quiet', 'HEAD^{commit}']);
  if (!head.ok) return { kind: 'none', reason: 'the repository has no commit yet' };
  const shallow = git(cwd, ['rev-parse', '--is-shallow-repository']).out === 'true';
  const shallowNote = shallow ? ' (this is a shallow clone)' : '';

  const tried: string[] = [];
  for (const upstream of upstreamCandidates(cwd, env)) {
    tried.push(upstream);
    const tip = git(cwd, ['rev-parse', '--verify', '--quiet', `refs/remotes/${upstream}^{commit}`]);
    if (!tip.ok) continue;
    const fork = git(cwd, ['merge-base', 'HEAD', tip.out]);
    if (!fork.ok) {
      return {
        kind: 'none',
        reason: `HEAD and ${upstream} share no commit in this clone${shallowNote}; ${FETCH_HINT}`,
      };
    }
    if (fork.out !== head.out) {
      return {
        kind: 'found',
        source: 'merge-base',
        commit: fork.out,
        description: `the merge-base of HEAD and ${upstream} (${short(fork.out)})`,
        path: undefined,
      };
    }
    // HEAD is on the upstream branch (or behind it): the merge-base is HEAD itself, whose
    // catalogue is the one being checked. Compare with what came before it.
    const parent = git(cwd, ['rev-parse', '--verify', '--quiet', 'HEAD~1^{commit}']);
    if (!parent.ok) {
      return {
        kind: 'none',
        reason: shallow
          ? `HEAD is on ${upstream} and its previous commit is not in this shallow clone; ${FETCH_HINT}`
          : `HEAD is on ${upstream} and is its first commit: there is no earlier catalogue`,
      };
    }
    return {
      kind: 'found',
      source: 'previous-commit',
      commit: parent.out,
      description: `the previous commit HEAD~1 (${short(parent.out)}), as HEAD is on ${upstream}`,
      path: undefined,
    };
  }
  return {
    kind: 'none',
    reason: `no upstream default branch in this clone (tried ${tried.join(', ')})${shallowNote}; ${FETCH_HINT}`,
  };
}

/**
 * The remote branches that may be the one a branch is merged into, best first, deduplicated:
 * a pull/merge request's target, `origin/HEAD`, GitLab's default branch, main, master.
 */
function upstreamCandidates(
  cwd: string,
  env: Readonly<Record<string, string | undefined>>,
): string[] {
  const names: string[] = [];
  const target = env.GITHUB_BASE_REF || env.CI_MERGE_REQUEST_TARGET_BRANCH_NAME;
  if (target) names.push(`${REMOTE}/${target}`);
  const head = git(cwd, ['symbolic-ref', '--quiet', '--short', `refs/remotes/${REMOTE}/HEAD`]);
  if (head.ok && head.out !== '') names.push(head.out);
  else names.push(`${REMOTE}/HEAD`); // tried, so a "no base" message lists it
  if (env.CI_DEFAULT_BRANCH) names.push(`${REMOTE}/${env.CI_DEFAULT_BRANCH}`);
  names.push(`${REMOTE}/main`, `${REMOTE}/master`);
  return [...new Set(names)];
}

/** The catalogue committed at a base, or `absent` when the base has none at that path. */
export type BaseCatalogue =
  | { readonly kind: 'catalogue'; readonly catalogue: Catalogue }
  | { readonly kind: 'absent'; readonly spec: string };

/**
 * Read the catalogue committed at `base` (`git show COMMIT:PATH`); `defaultPath` is the
 * catalogue's path relative to `cwd` (`catalogue/catalogue.json`). A base that predates
 * the catalogue is `absent`: every event in it is new, so nothing can break.
 *
 * @throws {ValidationError} when the committed file is not a catalogue this version reads.
 */
export function readBaseCatalogue(
  base: Extract<CheckBase, { kind: 'found' }>,
  defaultPath: string,
  cwd: string,
): BaseCatalogue {
  const path = base.path ?? `./${defaultPath}`;
  const spec = `${base.commit}:${path}`;
  const shown = git(cwd, ['show', spec]);
  if (!shown.ok) return { kind: 'absent', spec: `${short(base.commit)}:${path}` };
  return {
    kind: 'catalogue',
    catalogue: parseCatalogue(shown.raw, `${short(base.commit)}:${path}`),
  };
}

type GitResult =
  | { readonly ok: true; readonly out: string; readonly raw: string }
  | { readonly ok: false; readonly out: ''; readonly missing: boolean; readonly stderr: string };

/** Run a read-only git command; never throws. `out` is trimmed stdout. */
function git(cwd: string, args: readonly string[]): GitResult {
  try {
    const raw = execFileSync('git', args, {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 256 * 1024 * 1024,
      // Read-only commands must not take the index lock (a concurrent git in the checkout).
      env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' },
    });
    return { ok: true, out: raw.trim(), raw };
  } catch (error) {
    const e = error as { code?: unknown; stderr?: unknown };
    return {
      ok: false,
      out: '',
      missing: e.code === 'ENOENT',
      stderr:
        String(e.stderr ?? '')
          .trim()
          .split('\n')[0] ?? '',
    };
  }
}

function short(sha: string): string {
  return sha.slice(0, 7);
}
