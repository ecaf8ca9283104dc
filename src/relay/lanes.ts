/**
 * Lanes: which relay processes claim which receivers' rows (the domain-events reference's
 * `receiver` lane, `run_relay` lane, `claim_batch` lane / exclude_lanes).
 *
 * A named lane is the keys of the durable receivers declared in it; the default lane is
 * every row no named lane takes — so it also takes rows whose receiver has since been
 * deleted (recorded `orphaned`), or is no longer durable. Read from the config (once per
 * set of lanes per outbox, see laneClaimOf), never copied onto the row, so moving a
 * receiver to another lane moves its owed rows with it.
 */
import { DEFAULT_LANE, type OutboxConfig } from '../declare/define-outbox.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import { claimLeaseSeconds } from './claim-lease.js';

/**
 * The lane a relay serves: a lane's name, or `null` for every lane (a single relay in
 * development; the reference's `None`).
 */
export type LaneChoice = string | null;

/** The lane of a row's receiver key: its declared lane, or the default one for any other key. */
export function laneOfKey(config: OutboxConfig, receiverKey: string): string {
  const receiver = config.receiver(receiverKey);
  return receiver?.mode === 'durable' ? receiver.lane : DEFAULT_LANE;
}

/**
 * The lanes a relay (or a `deliverPending` call) serves, validated: `lane` (`null` for
 * every lane) less `excludeLanes`. A lane no receiver declares is refused, naming it and
 * the declared lanes, because a relay serving it would claim nothing and look healthy
 * doing it; so is an excluded lane nobody declares (a typo would exclude nothing).
 *
 * @param caller the call to name in a refusal (`runRelay`, `deliverPending`).
 * @returns the lanes served, sorted (a subset of `config.lanes`), or `undefined` for every
 * lane with nothing excluded (the claim then takes no lane filter).
 */
export function servedLanes(
  config: OutboxConfig,
  caller: string,
  lane: LaneChoice | undefined,
  excludeLanes: readonly string[] | undefined,
  defaultChoice: LaneChoice,
): readonly string[] | undefined {
  const choice = lane === undefined ? defaultChoice : lane;
  const declared = config.lanes;
  const refuse = (option: string, name: unknown) => {
    throw new ConfigurationError(
      `${caller}({ ${option} }): no receiver is declared in lane ${JSON.stringify(name)} (declared lanes: ${declared.join(', ')}); a relay serving it would claim nothing and look healthy doing it. Declare a durable receiver with lane: ${JSON.stringify(name)}, or serve a declared lane`,
      { path: option },
    );
  };
  if (choice !== null) {
    if (typeof choice !== 'string') refuse('lane', choice);
    if (!declared.includes(choice)) refuse('lane', choice);
  }
  for (const excluded of excludeLanes ?? []) {
    if (!declared.includes(excluded)) refuse('excludeLanes', excluded);
  }
  if (choice === null && (excludeLanes?.length ?? 0) === 0) return undefined;
  const excluded = new Set(excludeLanes ?? []);
  return (choice === null ? declared : [choice]).filter((l) => !excluded.has(l));
}

/**
 * The lanes a claim takes: those served (`undefined`: every lane) less those set aside.
 * With none set aside, `served` itself, so the claim keeps its filter (none for every lane).
 */
export function lanesNotSetAside(
  config: OutboxConfig,
  served: readonly string[] | undefined,
  aside: ReadonlySet<string>,
): readonly string[] | undefined {
  if (aside.size === 0) return served;
  return (served ?? config.lanes).filter((l) => !aside.has(l));
}

/** A claim's receiver-key filter for a set of lanes (see ClaimOptions). */
export interface LaneKeyFilter {
  readonly receiverKeys?: readonly string[];
  readonly excludeReceiverKeys?: readonly string[];
}

/**
 * The receiver-key filter that claims exactly the rows of `lanes`: with the default lane
 * among them, every key but those of the named lanes left out (nothing to leave out when
 * every named lane is served, or none is declared: the unfiltered claim); without it, the
 * keys of the named lanes served (none at all: an empty list, which claims nothing).
 */
export function laneKeyFilter(config: OutboxConfig, lanes: readonly string[]): LaneKeyFilter {
  const served = new Set(lanes);
  const durable = config.receivers.filter((r) => r.mode === 'durable');
  if (served.has(DEFAULT_LANE)) {
    const left = durable.filter((r) => r.lane !== DEFAULT_LANE && !served.has(r.lane));
    return left.length === 0 ? {} : { excludeReceiverKeys: left.map((r) => r.key) };
  }
  return {
    receiverKeys: durable
      .filter((r) => r.lane !== DEFAULT_LANE && served.has(r.lane))
      .map((r) => r.key),
  };
}

/** What a claim derives from the lanes it serves: its receiver-key filter and its lease. */
export interface LaneClaim {
  readonly keys: LaneKeyFilter;
  /** See {@link claimLeaseSeconds}. */
  readonly leaseSeconds: number;
}

/**
 * The {@link LaneClaim} of `lanes` (every lane when undefined), computed once per set of
 * lanes per outbox and kept in `known`: the config is frozen, so a claim need not walk
 * every receiver again. `known` holds one entry per distinct set a claim asked for (the
 * lanes served, less those a deferral paused), a handful at most.
 */
export function laneClaimOf(
  config: OutboxConfig,
  known: Map<string, LaneClaim>,
  lanes: readonly string[] | undefined,
): LaneClaim {
  const key = lanes === undefined ? '*' : JSON.stringify(lanes);
  let claim = known.get(key);
  if (!claim) {
    claim = {
      keys: lanes === undefined ? {} : laneKeyFilter(config, lanes),
      leaseSeconds: claimLeaseSeconds(config, lanes),
    };
    known.set(key, claim);
  }
  return claim;
}

/**
 * The lanes a deferral set aside, each until a time on the relay's `now` (ms). Per relay
 * process, sharing nothing: every relay in a lane learns of a throttle from its own first
 * deferral, at the cost of one call each.
 */
export class LanePauses {
  readonly #until = new Map<string, number>();

  /** Set `lane` aside until `untilMs` (a later pause extends an earlier one). */
  pause(lane: string, untilMs: number): void {
    this.#until.set(lane, Math.max(untilMs, this.#until.get(lane) ?? 0));
  }

  /** Whether any lane is (or was, until {@link active} ends it) set aside: the hot path asks this before it reads the clock. */
  get any(): boolean {
    return this.#until.size > 0;
  }

  /** Whether `lane` is set aside at `nowMs`. */
  isPaused(lane: string, nowMs: number): boolean {
    return (this.#until.get(lane) ?? Number.NEGATIVE_INFINITY) > nowMs;
  }

  /** The lanes still set aside at `nowMs`; a pause whose time has come ends here. */
  active(nowMs: number): ReadonlySet<string> {
    for (const [lane, until] of this.#until) if (until <= nowMs) this.#until.delete(lane);
    return new Set(this.#until.keys());
  }
}

/**
 * What a batch is told of its lanes: which are set aside (their unstarted rows are handed
 * back, not attempted), and where a deferral reports the lane it pauses.
 */
export interface LaneControl {
  /** Whether the rows of `lane` are set aside now. */
  setAside(lane: string): boolean;
  /** A deferral of `lane`'s receiver asked for `seconds`: set the lane aside. */
  defer(lane: string, seconds: number): void;
}
