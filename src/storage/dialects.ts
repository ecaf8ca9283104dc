/**
 * The dialect registry: every database outboxkit runs on, ONE entry each (see
 * {@link DialectEntry}; the entry lives in the dialect's folder). Everything outside
 * `storage/<dialect>/` finds its dialect here — by a Sequelize ({@link dialectOf}) or by a
 * name the user typed ({@link dialectNamed}) — and then reads the entry's capabilities and
 * factories, never the name. A new dialect is a folder under `storage/` and one line in
 * {@link DIALECTS} (docs/architecture.md, "Adding a dialect").
 */
import type { Sequelize } from 'sequelize';
import { ConfigurationError } from '../errors/outbox-error.js';
import type { DatabaseCapabilities, DialectEntry } from './dialect-entry.js';
import { mariadbEntry, mysqlEntry } from './mariadb/entry.js';
import { postgresEntry } from './postgres/entry.js';
import { sqliteEntry } from './sqlite/entry.js';

/** Every supported dialect, in the order messages list them. */
const DIALECTS = [postgresEntry, sqliteEntry, mariadbEntry, mysqlEntry] as const;

/** The name of a supported dialect (Sequelize's, `sequelize.getDialect()`). */
export type DialectName = (typeof DIALECTS)[number]['name'];

/** Every supported dialect's entry, in the registry's order. */
export function dialectEntries(): readonly DialectEntry[] {
  return DIALECTS;
}

/** The names of the supported dialects (`['postgres', 'sqlite']`), e.g. for a CLI's choices. */
export function supportedDialects(): readonly DialectName[] {
  return DIALECTS.map((d) => d.name);
}

/** The entry of a dialect by its name, or undefined when outboxkit does not support it. */
export function findDialect(name: string): DialectEntry | undefined {
  return DIALECTS.find((d) => d.name === name);
}

/**
 * The dialects as a message lists them: `postgres (PostgreSQL) and sqlite (SQLite)`, or
 * by their titles only (`PostgreSQL or SQLite`).
 */
export function listDialects(
  entries: readonly DialectEntry[] = DIALECTS,
  { join = 'and', titles = false }: { join?: 'and' | 'or'; titles?: boolean } = {},
): string {
  const names = entries.map((d) => (titles ? d.title : `${d.name} (${d.title})`));
  return names.length <= 1
    ? (names[0] ?? 'none')
    : `${names.slice(0, -1).join(', ')} ${join} ${names.at(-1)}`;
}

/** The dialects whose capabilities pass `has`, e.g. `dialectsWith((c) => c.schemas)`. */
export function dialectsWith(has: (c: DatabaseCapabilities) => boolean): readonly DialectEntry[] {
  return DIALECTS.filter((d) => has(d.capabilities));
}

/** Where a refusal of a dialect points: the call and the option at fault. */
export interface DialectLookup {
  /** Who asks, as the message starts: `createOutbox(config, { sequelize })`, `--dialect`. */
  readonly who?: string;
  /** The option's path on the error. @defaultValue `'sequelize'` */
  readonly path?: string;
  /** What is of that dialect, for the message: `this Sequelize uses`, `this database is`. */
  readonly found?: string;
}

/**
 * The entry of a dialect named by the user (`--dialect`, a Sequelize's `getDialect()`).
 * @throws {ConfigurationError} naming the supported dialects when outboxkit has no entry
 * of that name.
 */
export function dialectNamed(name: string, lookup: DialectLookup = {}): DialectEntry {
  const entry = findDialect(name);
  if (entry) return entry;
  const { who, path = 'dialect', found = 'got' } = lookup;
  throw new ConfigurationError(
    `${who ? `${who}: ` : ''}outboxkit supports ${listDialects()}; ${found} ${JSON.stringify(name)}`,
    { path },
  );
}

/**
 * The entry of the dialect a Sequelize instance talks.
 * @throws {ConfigurationError} naming the supported dialects for any other dialect.
 */
export function dialectOf(sequelize: Sequelize, lookup: DialectLookup = {}): DialectEntry {
  return dialectNamed(sequelize.getDialect(), {
    path: 'sequelize',
    found: 'this Sequelize uses',
    ...lookup,
  });
}

/** The capabilities of a dialect named by the user (`migrate --print-sql --dialect`). */
export function capabilitiesOf(name: string, lookup: DialectLookup = {}): DatabaseCapabilities {
  return dialectNamed(name, lookup).capabilities;
}

/**
 * The dialect a connection URL names by its start (`postgres://`, `postgresql://`,
 * `sqlite:`), or undefined for a URL no entry claims.
 */
export function dialectOfUrl(url: string): DialectEntry | undefined {
  return DIALECTS.find((d) => d.connection.urlPrefixes.some((p) => url.startsWith(p)));
}

/**
 * A URL of a file database (`sqlite:path`, `sqlite://path`, `sqlite::memory:`): its
 * dialect and the file's path as written (relative paths unresolved); undefined for a
 * server's URL or one no entry claims.
 */
export function fileDatabaseUrl(
  url: string,
): { readonly entry: DialectEntry; readonly path: string } | undefined {
  const entry = dialectOfUrl(url);
  if (!entry?.connection.file) return undefined;
  const prefix = entry.connection.urlPrefixes.find((p) => url.startsWith(p)) ?? '';
  return { entry, path: url.slice(prefix.length).replace(/^\/\//, '') };
}

/** The URL starts every dialect accepts, as a message lists them: `postgres://, postgresql:// or sqlite:`. */
export function listUrlPrefixes(): string {
  const all = DIALECTS.flatMap((d) => d.connection.urlPrefixes);
  return all.length <= 1 ? (all[0] ?? '') : `${all.slice(0, -1).join(', ')} or ${all.at(-1)}`;
}

/**
 * What a wakeup's declared needs ask of a database (see `WakeupCapabilities`): a signal that
 * rides inside the write needs LISTEN/NOTIFY; a wakeup naming the dialects it serves needs
 * one of them. Undefined when `entry` serves it, else why not (a sentence part: `needs
 * PostgreSQL`).
 */
export function wakeupRefusal(
  entry: DialectEntry,
  wakeup: {
    readonly notifyInWrite?: { readonly channel: string } | undefined;
    readonly dialects?: readonly string[] | undefined;
  },
): string | undefined {
  if (wakeup.notifyInWrite && !entry.capabilities.listenNotify) {
    return `needs ${listDialects(
      dialectsWith((c) => c.listenNotify),
      { join: 'or', titles: true },
    )} (LISTEN/NOTIFY)`;
  }
  if (wakeup.dialects && !wakeup.dialects.includes(entry.name))
    return `needs ${wakeup.dialects.join(' or ')}`;
  return undefined;
}
