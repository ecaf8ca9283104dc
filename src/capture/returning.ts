/**
 * `Model.update`, a soft `Model.destroy` and `Model.restore` where the dialect's UPDATE
 * hands back its rows (`returningOnUpdate`), with each outbox's capture after them: run
 * with `returning: true` (`RETURNING *`), their rows are the `after` images, so the
 * statement costs no read after it (the reference: "`QuerySet.update()`: RETURNING of the
 * keys / of the fields"). The caller's result keeps its shape — `update`'s `[count]` (its
 * rows with individual hooks), `destroy`'s and `restore`'s count — unless it asked for the
 * rows. A caller naming its own `returning` attributes, and a hard delete, go the hooks'
 * way (rows read first, re-read by key).
 *
 * The statement's state ({@link Statement}) is carried to its hooks: a before-hook reads
 * the matched rows first there when a before-image needs them (`beforeAndAfter`), and the
 * capturers read them after the statement.
 */
import { ConfigurationError } from '../errors/outbox-error.js';
import type { CaptureContext } from './context.js';
import type { ReturningCapturer } from './model-captures.js';
import { capturesIfAny } from './model-captures.js';
import { rowId } from './reads.js';
import type { Instance, ModelClass, Values, WriteOptions } from './sequelize-model.js';
import { carryStatement, type ReturningKind, Statement, withoutCarried } from './statement.js';

type Write = (...args: unknown[]) => Promise<unknown>;

/** `original` run with RETURNING whenever an outbox captures this kind of the model's statement. */
export function capturingReturning(kind: ReturningKind, model: ModelClass, original: Write): Write {
  const at = kind === 'update' ? 1 : 0;
  const paranoid = model._timestampAttributes.deletedAt !== undefined;
  return async function returning(this: unknown, ...args: unknown[]) {
    const capturers = capturesIfAny(model)?.returning[kind] ?? [];
    const options = (args[at] ?? {}) as WriteOptions;
    const byReturning =
      capturers.length > 0 &&
      !Array.isArray(options.returning) &&
      (kind !== 'destroy' || (paranoid && !options.force));
    if (!byReturning) {
      // Not carried on: a statement carried in from an enclosing write is not this one.
      const own = withoutCarried(options);
      return original.apply(this, own === options ? args : withOptions(args, at, own));
    }
    const statement = new Statement(model);
    statement.returning = kind;
    // Rows nobody but capture reads come back raw (no instance built per row), by column.
    const raw = !options.returning && !options.individualHooks;
    const given = { ...options, returning: true, ...(raw ? { raw: true } : {}) };
    carryStatement(given, statement);
    const result = await original.apply(this, withOptions(args, at, given));
    const rows = returnedRows(kind, model, result, raw);
    for (const c of capturers) {
      await c.after(statement, kind === 'update' ? args[0] : undefined, rows, options);
    }
    if (options.returning) return result;
    if (kind === 'update') return options.individualHooks ? result : [(result as unknown[])[0]];
    return rows.length;
  };
}

function withOptions(args: readonly unknown[], at: number, options: WriteOptions): unknown[] {
  const call = [...args];
  while (call.length < at) call.push(undefined);
  call[at] = options;
  return call;
}

/** The rows a statement run with `returning: true` gave, as instances. */
function returnedRows(
  kind: ReturningKind,
  model: ModelClass,
  result: unknown,
  raw: boolean,
): Instance[] {
  const returned = kind === 'update' ? ((result as [number, unknown[]?])[1] ?? []) : result;
  if (!Array.isArray(returned)) {
    throw new ConfigurationError(
      `capture(${model.name}): a ${kind} with returning: true gave no rows; this Sequelize answers otherwise than 6.37 — pass your own returning list to have capture read the rows instead`,
      { path: `capture(${model.name})` },
    );
  }
  if (!raw) return returned as Instance[];
  return byAttribute(model, returned as Values[]).map((v) => ({
    dataValues: v,
    _previousDataValues: v,
  }));
}

/**
 * Raw rows by attribute name: an increment's `RETURNING *` names the columns, an update's
 * RETURNING aliases them to their attributes (`"hit_count" AS "hits"`).
 */
export function byAttribute(model: ModelClass, rows: readonly Values[]): Values[] {
  const columns = Object.entries(model.rawAttributes).map(([name, a]) => [name, a.field ?? name]);
  return rows.map((row) =>
    Object.fromEntries(columns.map(([n, f]) => [n, Object.hasOwn(row, n!) ? row[n!] : row[f!]])),
  );
}

/**
 * A capturer of one kind of statement run with RETURNING: its rows are the `after`
 * images, paired by key with the rows read first (`beforeAndAfter`), `changed` as
 * `changedOf` the statement's values says.
 */
export function fromReturning(
  ctx: CaptureContext,
  changedOf: (values: unknown) => string[] | null,
): ReturningCapturer {
  const { model } = ctx;
  return {
    after: (statement, values, rows, options) => {
      const id = (r: Instance) => rowId(model, r.dataValues);
      const first = new Map((ctx.slotOf(statement).readFirst ?? []).map((r) => [id(r), r]));
      const changed = changedOf(values);
      const changes = rows.map((a) => ({
        before: first.get(id(a))?.dataValues ?? null,
        after: a.dataValues,
        changed,
      }));
      return ctx.write('updated', changes, options) ?? Promise.resolve();
    },
  };
}
