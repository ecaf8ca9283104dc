import { closestName } from '../declare/config-path.js';
import type { OutboxConfig } from '../declare/define-outbox.js';
import { ValidationError } from '../errors/outbox-error.js';
import { frames, type Suppression } from './frame.js';
import { emptyScope } from './scope.js';

/** Options of {@link suppressed}. */
export interface SuppressOptions {
  /**
   * Why these events are not delivered: required, and written to each event's row
   * (`suppressed_reason`), because a silently dropped event is unauditable.
   */
  readonly reason: string;
  /**
   * Write the event, marked, with no deliveries (`true`), or write nothing at all
   * (`false`): a hundred-thousand-row import writing a hundred thousand suppressed rows is
   * a surprise, and this trades the audit trail for the write — named, never defaulted.
   * @defaultValue true
   */
  readonly record?: boolean;
}

/**
 * Fire these events without delivering them, and say why, for everything `fn` does.
 *
 * With `record: true` (the default) an event named here is written with its
 * `suppressed_reason` and NO delivery rows: no durable receiver owes it, no `inline` or
 * `onCommit` receiver runs, no wakeup is signalled, and the prune counts it settled.
 * `fire()` answers `{ suppressed: reason, recorded: true }`. With `record: false` nothing
 * is written; `fire()` answers `{ suppressed: reason, recorded: false, id: '', sequence: '' }`.
 * The payload is validated either way: a suppressed bug is still a bug.
 *
 * Nested blocks accumulate rather than replace: a library that suppresses its own event
 * inside your block must not re-enable yours. The innermost matching reason is recorded,
 * and any matching block asking not to record wins, the safer half of the disagreement.
 *
 * Names are event names (`'shop.OrderPlaced'`). Each is checked against the config of the
 * outbox that fires inside the block: a name it does not declare is refused at that
 * `fire()` (a `ValidationError` with a did-you-mean), since a typo would otherwise
 * suppress nothing, silently.
 *
 * @returns what `fn` returns.
 * @throws {ValidationError} for no names, an empty name, or a missing reason.
 */
export function suppressed<T>(
  names: string | readonly string[],
  options: SuppressOptions,
  fn: () => T,
): T {
  const list = typeof names === 'string' ? [names] : names;
  if (!Array.isArray(list) || list.length === 0) {
    throw new ValidationError('suppressed(): name at least one event', { path: 'names' });
  }
  for (const name of list) {
    if (typeof name !== 'string' || name.length === 0) {
      throw new ValidationError(
        `suppressed(): every name must be a declared event's name (got ${JSON.stringify(name)})`,
        { path: 'names' },
      );
    }
  }
  const reason = (options as SuppressOptions | undefined)?.reason;
  if (typeof reason !== 'string' || reason.trim() === '') {
    throw new ValidationError(
      `suppressed(${list.map((n) => JSON.stringify(n)).join(', ')}): a reason is required; it is written on every event suppressed, so the silence can be audited`,
      { path: 'reason' },
    );
  }
  const record = options.record ?? true;
  if (typeof record !== 'boolean') {
    throw new ValidationError(
      `suppressed(): record must be true or false (got ${JSON.stringify(record)})`,
      {
        path: 'record',
      },
    );
  }
  if (typeof fn !== 'function') {
    throw new ValidationError('suppressed(): the third argument must be the function to run');
  }
  const outer = frames.getStore();
  const block: Suppression = { names: new Set(list), reason, record, checked: new WeakSet() };
  return frames.run(
    {
      scope: outer?.scope ?? emptyScope(),
      headers: outer?.headers ?? null,
      suppressions: [...(outer?.suppressions ?? []), block],
    },
    fn,
  );
}

/** What the enclosing blocks decide for one event: its reason and whether to write it. */
export interface SuppressionVerdict {
  readonly reason: string;
  readonly record: boolean;
}

/**
 * The verdict of the blocks (outermost first) on the event `name`: the innermost matching
 * reason, and `record` only if every matching block records. `null` when none matches.
 */
export function suppressionOf(
  blocks: readonly Suppression[],
  name: string,
): SuppressionVerdict | null {
  let reason: string | undefined;
  let record = true;
  for (let i = blocks.length - 1; i >= 0; i--) {
    const block = blocks[i];
    if (!block.names.has(name)) continue;
    reason ??= block.reason;
    if (!block.record) record = false;
  }
  return reason === undefined ? null : { reason, record };
}

/**
 * Refuse a block naming an event `config` does not declare, once per block and config.
 * @throws {ValidationError} naming the unknown event, with a did-you-mean.
 */
export function checkSuppressedNames(
  blocks: readonly Suppression[],
  config: OutboxConfig,
  where: string,
): void {
  for (const block of blocks) {
    if (block.checked.has(config)) continue;
    for (const name of block.names) {
      if (config.route(name)) continue;
      const hint = closestName(
        name,
        config.eventList.map((e) => e.name),
      );
      throw new ValidationError(
        `${where}: suppressed() names ${JSON.stringify(name)}, which is not a declared event${hint ? ` — did you mean "${hint}"?` : ''}; nothing was written`,
        { path: 'suppressed' },
      );
    }
    block.checked.add(config);
  }
}
