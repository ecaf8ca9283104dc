/**
 * The CLI's exit codes, one table for every command (printed by `outbox relay --help`):
 *
 * - 0: done — every delivery of `relay --once` succeeded, a stopped relay drained, the
 *   migrations are applied (`migrate --check`: nothing pending).
 * - 1: could not run — no or bad config, no database given, a database that does not
 *   answer within `--connect-timeout`, tables missing, a bad option.
 * - 2: ran, and something needs a person — `relay --once` saw failures, dead letters or
 *   orphans; `migrate --check` found migrations pending; `health` is past a threshold
 *   given (`--max-owed`, `--max-oldest-age`, `--max-dead`, `--max-lapsed`);
 *   `quiet-receivers` lists a receiver quiet inside its window; `dead --fail-if-any` lists
 *   a dead letter (a bare `dead` lists them with exit 0).
 * - 3: `relay` was stopped and `--shutdown-timeout` passed with deliveries still in
 *   flight: they were handed back (or, where that could not run, left to their leases).
 */
export const EXIT = {
  ok: 0,
  couldNotRun: 1,
  needsAttention: 2,
  abandoned: 3,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
