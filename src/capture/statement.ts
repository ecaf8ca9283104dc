/**
 * What the hooks of one statement share: the rows it read first, an instance's values
 * before its destroy or restore, an upsert's records and conflict key, the rows a delete
 * reaches — one {@link Statement} per statement, never a module's map, so two writes in
 * flight together never see each other's.
 *
 * How a hook finds its statement. Sequelize hands a statement's before- and after-hooks
 * (and the per-row hooks of a bulk statement with `individualHooks`) the same options
 * object, so the statement is attached to that very object, as a property no copy takes
 * (not enumerable: neither Sequelize's clones of options nor a spread copy it). A write
 * nested in another — `create` → `save`, the children Sequelize destroys with a parent,
 * a write of a hook's that is handed the options — copies the options, so it is a
 * statement of its own.
 *
 * Two statements do reach hooks that get a copy of their options, and are carried there
 * (an enumerable property: Sequelize's clones keep a class instance by reference):
 *
 * - a static `update`, soft `destroy` or `restore` that capture runs with RETURNING
 *   (./returning.ts): its wrapper reads, after the statement, what its hooks read first;
 * - a `bulkCreate` with `individualHooks`: Sequelize saves each record with a copy of its
 *   options, and those saves' hooks must not capture the rows a second time — only the
 *   statement's own rows, so another write of the model that a hook hands the options to
 *   is still captured.
 */
import type { Runtime } from '../runtime.js';
import type { CascadePlan } from './cascade.js';
import type { Instance, Values } from './sequelize-model.js';

/** The static statements capture may run with RETURNING (./returning.ts). */
export type ReturningKind = 'update' | 'destroy' | 'restore';

/** What one outbox's capture keeps of one statement. */
export interface CaptureSlot {
  /** The rows the statement matched, read before it. */
  readFirst?: Instance[];
  /** An upsert's records as given (Sequelize maps rows back by index, wrongly once one conflicts). */
  given?: Values[];
  /** The conflict key an upsert's values chose. */
  conflictKey?: readonly string[];
  /** An instance's values before its destroy or restore (which resets them before its after-hook). */
  snapshot?: Values;
  /** The rows a delete reaches through foreign keys, read before it (./cascade-hooks.ts). */
  cascade?: CascadePlan;
}

/** One statement's state, shared by its hooks (and its wrapper). */
export class Statement {
  /**
   * A bulk statement, captured whole: its per-row hooks (`individualHooks`) write nothing.
   */
  bulk = false;
  /**
   * A `bulkCreate`'s own instances, when Sequelize saves them one by one (`individualHooks`):
   * the hooks of those saves write nothing.
   */
  rows: ReadonlySet<object> | undefined;
  /** Set when the wrapper runs this statement with RETURNING and writes its events after it. */
  returning: ReturningKind | undefined;
  readonly #slots = new Map<Runtime, CaptureSlot>();

  constructor(
    /** The model whose write this is. */
    readonly model: object,
  ) {}

  /** What the capture of outbox `rt` keeps of this statement. */
  slot(rt: Runtime): CaptureSlot {
    let slot = this.#slots.get(rt);
    if (!slot) {
      slot = {};
      this.#slots.set(rt, slot);
    }
    return slot;
  }
}

const ATTACHED = Symbol('outboxkit.capture.statement');
const CARRIED = Symbol('outboxkit.capture.carried');

type Marked = { [ATTACHED]?: Statement; [CARRIED]?: Statement };

/** The statement attached to this options object by a hook of its statement, if any. */
export function statementOf(options: object): Statement | undefined {
  return (options as Marked)[ATTACHED];
}

/**
 * The statement of a before-hook's options, attached to them: the one already attached (a
 * hook of another outbox's capture ran first), the one a wrapper carried in for this
 * model's statement of this `kind` run with RETURNING, or a new one.
 */
export function beginStatement(options: object, model: object, kind?: ReturningKind): Statement {
  const marked = options as Marked;
  const attached = marked[ATTACHED];
  if (attached) return attached;
  const carried = marked[CARRIED];
  const statement =
    carried && kind && carried.model === model && carried.returning === kind
      ? carried
      : new Statement(model);
  Object.defineProperty(options, ATTACHED, { value: statement, enumerable: false });
  return statement;
}

/**
 * Carry `statement` to the hooks of copies of `options` (Sequelize's clones and spreads
 * take it along): a wrapper's RETURNING call, a `bulkCreate`'s per-row saves.
 */
export function carryStatement(options: object, statement: Statement): void {
  (options as Marked)[CARRIED] = statement;
}

/** These options without a statement carried into them (for a call that carries none). */
export function withoutCarried<T extends object>(options: T): T {
  if (!(CARRIED in options)) return options;
  const { [CARRIED]: _, ...rest } = options as T & Marked;
  return rest as T;
}

/**
 * Whether an instance hook is Sequelize's per-row hook of a bulk statement captured whole
 * (`individualHooks`), which writes nothing of its own.
 */
export function partOfBulk(options: object, model: object, instance: object): boolean {
  if ((options as Marked)[ATTACHED]?.bulk) return true;
  const carried = (options as Marked)[CARRIED];
  return carried?.model === model && carried.rows?.has(instance) === true;
}
