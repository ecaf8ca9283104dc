/**
 * What capture reads of Sequelize 6's models and instances, untyped internals included
 * (`_previousDataValues`, `_timestampAttributes`, the associations' options): structural,
 * so any model built with `sequelize.define` or `Model.init` fits.
 */
import type { Sequelize, Transaction } from 'sequelize';

export type Values = Record<string, unknown>;

/** The options of a write, as its hooks and wrapper see them. */
export type WriteOptions = Record<string, unknown> & { transaction?: Transaction | null };

/** What capture reads of a Sequelize 6 instance. */
export interface Instance {
  dataValues: Values;
  _previousDataValues: Values;
}

/** What capture reads of one of a model's associations. */
export interface AssociationLike {
  readonly associationType?: string;
  readonly target?: unknown;
  readonly foreignKey?: string;
  readonly options?: { useHooks?: boolean; onDelete?: string };
}

/** What capture uses of a Sequelize 6 model class. */
export interface ModelClass {
  readonly name: string;
  readonly sequelize?: Sequelize;
  readonly prototype: Record<string, unknown>;
  readonly primaryKeyAttributes: string[];
  readonly _timestampAttributes: { createdAt?: string; updatedAt?: string; deletedAt?: string };
  readonly _versionAttribute?: string;
  readonly rawAttributes: Record<string, { field?: string }>;
  readonly associations?: Record<string, AssociationLike>;
  getTableName(): unknown;
  addHook(type: string, name: string, fn: (...args: never[]) => unknown): void;
  findAll(options: Values): Promise<Instance[]>;
  /** The model without its default scope (the database's cascade knows no scope). */
  unscoped?(): ModelClass;
  [method: string]: unknown;
}
