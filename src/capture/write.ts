/**
 * Write the events of one statement's changes through `fire()`'s own steps (prepare, plan,
 * write, after commit), in the write's transaction: one `fireUnanswered` call per
 * statement, so a `bulkCreate` of 10,000 rows writes its events in one store call, not one
 * per row. An envelope of the capture's own topic whose values are all of their
 * attributes' JSON kinds is checked and encoded here, once (`envelopeText`), rather than
 * parsed by its zod schema and walked by the codec per row; any other goes the way of any
 * payload.
 *
 * A capture's change sinks — the outbox-wide ones (`defineOutbox({ sinks })`), then its own
 * (`capture(Model, { sink })`), as `ResolvedCapture.sinks` lists them — are handed the same
 * changes in the same transaction, after its events (or alone, with `outbox: false`).
 */
import type { Transaction } from 'sequelize';
import type { CapturedChange, ChangeExtension, ResolvedCapture } from '../declare/capture.js';
import { ValidationError } from '../errors/outbox-error.js';
import { fireUnanswered } from '../fire/fire.js';
import type { FireMessage } from '../fire/types.js';
import type { Runtime } from '../runtime.js';
import { resolveTransaction } from '../transaction/join.js';
import { envelopeOf, envelopeText, orderingKeyOf } from './envelope.js';
import { failedAfterRow } from './transaction.js';

const ENVELOPE_KEYS: ReadonlySet<string> = new Set([
  'model',
  'operation',
  'pk',
  'changed',
  'before',
  'after',
  'occurred_at',
  'tenant',
]);

/**
 * Fire the events of the changes (those of captured operations), in `transaction`. Called
 * after the rows are written: a failure dooms a transaction an unguarded write runs in
 * (see ./transaction.ts).
 */
export async function writeChanges(
  rt: Runtime,
  capture: ResolvedCapture,
  changes: readonly CapturedChange[],
  transaction: Transaction | null | undefined,
): Promise<void> {
  try {
    await write(rt, capture, changes, transaction);
  } catch (error) {
    failedAfterRow(rt.sequelize, transaction, error);
    throw error;
  }
}

async function write(
  rt: Runtime,
  capture: ResolvedCapture,
  changes: readonly CapturedChange[],
  transaction: Transaction | null | undefined,
): Promise<void> {
  const wanted = changes.filter((c) => capture.operations.has(c.operation));
  if (wanted.length === 0) return;
  if (capture.sinks.length === 0) return writeEvents(rt, capture, wanted, transaction);
  // The events and the sinks in ONE transaction, the write's (the wrapper always runs a
  // captured write in one; a transaction of its own only for a write that has none).
  const run = async (t: Transaction) => {
    if (capture.toOutbox) await writeEvents(rt, capture, wanted, t);
    await handToSinks(rt, capture, wanted, t);
  };
  const given = resolveTransaction(rt.sequelize, transaction);
  return given ? run(given) : rt.sequelize.transaction(run);
}

/**
 * Hand one statement's changes to the capture's sinks, in order, in the write's
 * transaction. A throw propagates as it is, as an `inline` receiver's does, and so aborts
 * the write: the caller catches the sink's own error.
 */
async function handToSinks(
  rt: Runtime,
  capture: ResolvedCapture,
  changes: readonly CapturedChange[],
  transaction: Transaction,
): Promise<void> {
  const context = {
    transaction,
    sequelize: rt.sequelize,
    model: capture.model,
    label: capture.label,
  };
  for (const sink of capture.sinks) await sink.write(changes, context);
}

/** The outbox events of one statement's changes (see the module's comment). */
async function writeEvents(
  rt: Runtime,
  capture: ResolvedCapture,
  wanted: readonly CapturedChange[],
  transaction: Transaction | null | undefined,
): Promise<void> {
  const where = `capture(${capture.model.name})`;
  const extensions = await extensionsOf(capture, wanted, where);
  const encoded: (string | undefined)[] = [];
  const messages: FireMessage[] = wanted.map((change, i) => {
    const extension = extensions[i];
    const payload = envelopeOf(capture, change);
    encoded.push(
      capture.topicOf || extension?.payload ? undefined : envelopeText(capture, payload),
    );
    for (const [key, value] of Object.entries(extension?.payload ?? {})) {
      if (ENVELOPE_KEYS.has(key)) {
        throw new ValidationError(
          `${where}: an extension's payload key "${key}" is one of the envelope's own; name it otherwise`,
          { path: `${where}.extend.payload.${key}` },
        );
      }
      payload[key] = value;
    }
    return {
      name: topicOf(capture, change, where),
      payload,
      orderingKey: orderingKeyOf(capture, change),
      occurredAt: change.occurredAt,
      // The extension's tenant wins, then the row's over the scope's (null too: a row of no
      // tenant is no one's).
      ...(extension?.tenant !== undefined
        ? { tenant: extension.tenant }
        : capture.tenant === undefined
          ? {}
          : { tenant: change.tenant ?? null }),
      ...(extension?.headers ? { headers: extension.headers } : {}),
      ...(extension?.columns ? { columns: extension.columns } : {}),
    };
  });
  await fireUnanswered(rt, messages, transaction, where, encoded);
}

async function extensionsOf(
  capture: ResolvedCapture,
  changes: readonly CapturedChange[],
  where: string,
): Promise<readonly (ChangeExtension | undefined)[]> {
  if (capture.extend) {
    const out: (ChangeExtension | undefined)[] = [];
    for (const change of changes) out.push((await capture.extend(change)) ?? undefined);
    return out;
  }
  if (capture.extendMany) {
    const out = await capture.extendMany(changes);
    if (!Array.isArray(out) || out.length !== changes.length) {
      throw new ValidationError(
        `${where}.extendMany returned ${Array.isArray(out) ? out.length : 'no array of'} extensions for ${changes.length} changes; return one (or undefined) per change, in their order`,
        { path: `${where}.extendMany` },
      );
    }
    return out;
  }
  return [];
}

/** The change's topic: the template's for its operation, or what the topic function gives. */
function topicOf(capture: ResolvedCapture, change: CapturedChange, where: string): string {
  if (!capture.topicOf) return capture.topics[change.operation]!;
  const topic = capture.topicOf(change);
  if (typeof topic !== 'string' || topic === '') {
    throw new ValidationError(
      `${where}.topic returned ${JSON.stringify(topic)}; return the name of an event declared in events`,
      { path: `${where}.topic` },
    );
  }
  return topic;
}
