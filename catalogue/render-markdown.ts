import type Handlebars from 'handlebars';
import type { Catalogue, CatalogueEvent, CatalogueReceiver } from '../src/introspect/index.js';
import { formatDuration } from './format-duration.js';
import { CATALOGUE_MARKDOWN_TEMPLATE } from './templates/catalogue-md.js';
import { loadHandlebars } from './toolchain.js';

let compiled: Handlebars.TemplateDelegate<MarkdownView> | undefined;

/**
 * Render a catalogue as Markdown, for a person onboarding onto the codebase: a summary
 * table, then each event with its payload fields and receivers, then the wildcards.
 *
 * Ends in exactly one newline, as the JSON form does: the file is committed and diffed.
 */
export function renderCatalogueMarkdown(catalogue: Catalogue): string {
  compiled ??= template();
  const text = compiled(view(catalogue));
  return `${text.replace(/\s+$/, '')}\n`;
}

function template(): Handlebars.TemplateDelegate<MarkdownView> {
  // An isolated environment: no helper or partial of the host application leaks in.
  const hbs = loadHandlebars().create();
  return hbs.compile<MarkdownView>(CATALOGUE_MARKDOWN_TEMPLATE, {
    noEscape: true,
    strict: true,
    knownHelpersOnly: true,
    knownHelpers: { if: true, each: true },
  });
}

interface MarkdownView {
  readonly summary: string;
  readonly summaryTable: string;
  readonly wildcardTable: string;
  readonly hasWildcards: boolean;
  readonly events: readonly EventView[];
  readonly wildcardReceivers: readonly unknown[];
}

interface EventView {
  readonly name: string;
  readonly version: number;
  readonly description: string;
  readonly retention: string;
  readonly codec: string;
  readonly fieldCount: number;
  readonly receiverCount: number;
  readonly payloadType: string;
  readonly fields: readonly unknown[];
  readonly fieldTable: string;
  readonly receivers: readonly unknown[];
  readonly receiverTable: string;
}

/**
 * The receivers table's columns, in the order a reader asks: what it is, when and where
 * it runs (mode, lane, timing: on record, due, eager), what one delivery is (targets),
 * then how it retries. A wildcard's table adds what it listens to (`AnyEvent` or its
 * topic pattern) after the key.
 */
const RECEIVER_COLUMNS = [
  ['key', 'Receiver'],
  ['kind', 'Kind'],
  ['mode', 'Mode'],
  ['site', 'Site'],
  ['lane', 'Lane'],
  ['timing', 'Timing'],
  ['targets', 'Targets'],
  ['maxAttempts', 'Max attempts'],
  ['leaseSeconds', 'Lease (s)'],
  ['timeoutSeconds', 'Timeout (s)'],
  ['backoff', 'Backoff (s)'],
  ['giveUpAfter', 'Gives up after'],
  ['location', 'Location'],
] as const;

type Column = (typeof RECEIVER_COLUMNS)[number][0] | 'listensTo';

function receiverTable(receivers: readonly CatalogueReceiver[], wildcards = false): string {
  const columns: (readonly [Column, string])[] = [...RECEIVER_COLUMNS];
  if (wildcards) columns.splice(1, 0, ['listensTo', 'Listens to']);
  return table(
    columns.map(([, title]) => title),
    receivers.map(receiverView).map((r) => columns.map(([name]) => r[name])),
  );
}

/**
 * A Markdown table with every column padded to its widest cell, the layout a Markdown
 * formatter (Biome, Prettier) gives it, so a formatter run over the repository leaves the
 * committed catalogue alone.
 */
function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(3, h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

type ReceiverView = Record<Column, string>;

function view(catalogue: Catalogue): MarkdownView {
  const own = catalogue.events.reduce((n, e) => n + e.receivers.length, 0);
  const wild = catalogue.wildcardReceivers.length;
  return {
    summary: `${plural(catalogue.events.length, 'event')}, ${plural(own + wild, 'receiver')} (${wild} wildcard). Sorted by name throughout.`,
    summaryTable: table(
      ['Event', 'Version', 'Fields', 'Receivers'],
      catalogue.events.map((e) => [
        `\`${e.name}\``,
        String(e.version),
        String(e.fields.length),
        String(e.receivers.length),
      ]),
    ),
    hasWildcards: wild > 0,
    events: catalogue.events.map(eventView),
    wildcardReceivers: catalogue.wildcardReceivers,
    wildcardTable: receiverTable(catalogue.wildcardReceivers, true),
  };
}

function eventView(e: CatalogueEvent): EventView {
  return {
    name: e.name,
    version: e.version,
    description: e.description ?? '',
    retention:
      e.retentionSeconds !== null
        ? `kept ${formatSeconds(e.retentionSeconds)}`
        : e.deleteWhen !== null
          ? `deleted once ${e.deleteWhen}`
          : 'the outbox default (`settings.retentionDays`)',
    codec: e.codec ?? 'json',
    fieldCount: e.fields.length,
    receiverCount: e.receivers.length,
    payloadType: typeof e.schema.type === 'string' ? e.schema.type : 'unknown',
    fields: e.fields,
    fieldTable: table(
      ['Field', 'Type', 'Required', 'Description'],
      e.fields.map((f) => [
        `\`${f.name}\``,
        `\`${cell(f.type)}\``,
        f.required ? 'yes' : 'no',
        cell(f.description ?? ''),
      ]),
    ),
    receivers: e.receivers,
    receiverTable: receiverTable(e.receivers),
  };
}

function receiverView(r: CatalogueReceiver): ReceiverView {
  const base = r.backoff.baseSeconds ?? 'default';
  const cap = r.backoff.capSeconds ?? 'default';
  const pattern = (r as Partial<CatalogueReceiver>).pattern ?? null;
  return {
    key: `\`${r.key}\``,
    listensTo:
      pattern === null
        ? r.event === null
          ? '`AnyEvent`'
          : `\`${r.event}\``
        : `\`${cell(pattern)}\``,
    kind: r.kind === 'delivery' ? `delivery (${cell(r.transport ?? '')})` : 'handler',
    mode: r.mode,
    site: r.site,
    lane: r.lane,
    timing: timing(r),
    targets: r.targets === null ? '—' : code(r.targets),
    maxAttempts: String(r.maxAttempts),
    leaseSeconds: r.leaseSeconds === null ? 'default' : String(r.leaseSeconds),
    timeoutSeconds: r.timeoutSeconds === null ? 'default' : String(r.timeoutSeconds),
    backoff: base === 'default' && cap === 'default' ? 'default' : `${base} to ${cap}`,
    giveUpAfter: r.giveUpAfterSeconds === null ? '—' : formatDuration(r.giveUpAfterSeconds),
    location: r.location === null ? '—' : code(r.location),
  };
}

/**
 * When a receiver runs, in a few words: `in the transaction`, `after commit`, `on
 * record`, `due 2d after occurredAt`, `due at src/due.ts:4`, with `, eager` for a durable
 * receiver also attempted at commit.
 */
function timing(r: CatalogueReceiver): string {
  if (r.mode === 'inline') return 'in the transaction';
  if (r.mode === 'onCommit') return 'after commit';
  const when =
    r.dueSeconds !== null
      ? `due ${formatDuration(r.dueSeconds)} after occurredAt`
      : r.dueCallable !== null
        ? `due at ${code(r.dueCallable)}`
        : 'on record';
  return (r as Partial<CatalogueReceiver>).eager ? `${when}, eager` : when;
}

/** A location in backticks; a runtime stand-in (`function due`) as it is. */
function code(text: string): string {
  return /^(function |anonymous function$)/.test(text) ? cell(text) : `\`${cell(text)}\``;
}

/** Make text safe inside a Markdown table cell. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function formatSeconds(seconds: number): string {
  if (seconds % 86_400 === 0) return plural(seconds / 86_400, 'day');
  if (seconds % 3600 === 0) return plural(seconds / 3600, 'hour');
  return plural(seconds, 'second');
}
