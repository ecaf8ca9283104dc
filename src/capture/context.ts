/**
 * One outbox's capture of one model, as every write kind's hooks use it: the capture, the
 * model, the dialect's capabilities, and how a statement's changes are written.
 */
import type { CaptureOperation, ResolvedCapture } from '../declare/capture.js';
import type { Runtime } from '../runtime.js';
import { type CaptureCapabilities, captureCapabilities } from './capabilities.js';
import { changeOf } from './envelope.js';
import type { Instance, ModelClass, Values, WriteOptions } from './sequelize-model.js';
import type { CaptureSlot, Statement } from './statement.js';
import { writeChanges } from './write.js';

/** One changed row as a write kind hands it over. */
export interface RowChange {
  before?: Values | null;
  after?: Values | null;
  changed?: readonly string[] | null;
}

export interface CaptureContext {
  readonly rt: Runtime;
  readonly capture: ResolvedCapture;
  readonly model: ModelClass;
  readonly capabilities: CaptureCapabilities;
  /** The `deletedAt` attribute of a paranoid model; undefined for another. */
  readonly deletedAt: string | undefined;
  /** `fields` without `createdAt`/`updatedAt`/version; null when `fields` is no list. */
  withoutStamps(fields: unknown): string[] | null;
  /** Write one statement's changes of `operation` (none, or an operation not captured: nothing). */
  write(
    operation: CaptureOperation,
    rows: readonly RowChange[],
    options: WriteOptions,
  ): Promise<void> | undefined;
  /** What this capture keeps of a statement. */
  slotOf(statement: Statement): CaptureSlot;
  /** Add a hook of this capture to the model (named, so capture's hooks are told apart). */
  onInstance(type: string, fn: (instance: Instance, options: WriteOptions) => unknown): void;
  onStatement(type: string, fn: (options: WriteOptions) => unknown): void;
  onRows<A>(type: string, fn: (rows: A, options: WriteOptions) => unknown): void;
}

export function captureContext(
  rt: Runtime,
  capture: ResolvedCapture,
  model: ModelClass,
): CaptureContext {
  const name = `outboxkit:${rt.processId}`;
  const ts = model._timestampAttributes;
  const stamps = new Set([ts.createdAt, ts.updatedAt, model._versionAttribute].filter(Boolean));
  const hook = (type: string, fn: unknown) =>
    model.addHook(type, name, fn as (...args: never[]) => unknown);
  return {
    rt,
    capture,
    model,
    capabilities: captureCapabilities(rt.sequelize),
    deletedAt: ts.deletedAt,
    withoutStamps: (fields) =>
      Array.isArray(fields) ? fields.filter((f: string) => !stamps.has(f)) : null,
    write: (operation, rows, options) => {
      if (rows.length === 0 || !capture.operations.has(operation)) return undefined;
      const at = rt.clock();
      return writeChanges(
        rt,
        capture,
        rows.map((r) => changeOf(capture, operation, r, at)),
        options.transaction,
      );
    },
    slotOf: (statement) => statement.slot(rt),
    onInstance: hook,
    onStatement: hook,
    onRows: hook,
  };
}

/** Pair rows read first with their rows after by position, when both lists are as long. */
export function pairedByIndex(
  first: readonly Instance[],
  after: readonly Instance[],
  changed: readonly string[] | null,
  { unpairedBefore }: { unpairedBefore: 'null' | 'byIndex' },
): RowChange[] {
  const byIndex = unpairedBefore === 'byIndex' || first.length === after.length;
  return after.map((a, i) => ({
    before: byIndex ? (first[i]?.dataValues ?? null) : null,
    after: a.dataValues,
    changed,
  }));
}
