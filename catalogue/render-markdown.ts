import Handlebars from 'handlebars';
import type { Catalogue, CatalogueEvent, CatalogueReceiver } from '../src/introspect/index.js';
import { CATALOGUE_MARKDOWN_TEMPLATE, RECEIVER_TABLE_PARTIAL } from './templates/catalogue-md.js';

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
  const hbs = Handlebars.create();
  hbs.registerPartial('receiverTable', RECEIVER_TABLE_PARTIAL);
  return hbs.compile<MarkdownView>(CATALOGUE_MARKDOWN_TEMPLATE, {
    noEscape: true,
    strict: true,
    knownHelpersOnly: true,
    knownHelpers: { if: true, each: true },
  });
}

interface MarkdownView {
  readonly summary: string;
  readonly hasWildcards: boolean;
  readonly events: readonly EventView[];
  readonly wildcardReceivers: readonly ReceiverView[];
}

interface EventView {
  readonly name: string;
  readonly version: number;
  readonly description: string;
  readonly retention: string;
  readonly fieldCount: number;
  readonly receiverCount: number;
  readonly payloadType: string;
  readonly fields: readonly {
    name: string;
    type: string;
    required: string;
    description: string;
  }[];
  readonly receivers: readonly ReceiverView[];
}

type ReceiverView = Record<
  | 'key'
  | 'kind'
  | 'mode'
  | 'site'
  | 'lane'
  | 'maxAttempts'
  | 'leaseSeconds'
  | 'timeoutSeconds'
  | 'backoff'
  | 'scheduling'
  | 'location',
  string
>;

function view(catalogue: Catalogue): MarkdownView {
  const own = catalogue.events.reduce((n, e) => n + e.receivers.length, 0);
  const wild = catalogue.wildcardReceivers.length;
  return {
    summary: `${plural(catalogue.events.length, 'event')}, ${plural(own + wild, 'receiver')} (${wild} wildcard). Sorted by name throughout.`,
    hasWildcards: wild > 0,
    events: catalogue.events.map(eventView),
    wildcardReceivers: catalogue.wildcardReceivers.map(receiverView),
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
    fieldCount: e.fields.length,
    receiverCount: e.receivers.length,
    payloadType: typeof e.schema.type === 'string' ? e.schema.type : 'unknown',
    fields: e.fields.map((f) => ({
      name: f.name,
      type: `\`${cell(f.type)}\``,
      required: f.required ? 'yes' : 'no',
      description: cell(f.description ?? ''),
    })),
    receivers: e.receivers.map(receiverView),
  };
}

function receiverView(r: CatalogueReceiver): ReceiverView {
  const base = r.backoff.baseSeconds ?? 'default';
  const cap = r.backoff.capSeconds ?? 'default';
  const scheduling = [
    r.targets !== null ? `targets ${r.targets}` : '',
    r.dueSeconds !== null ? `due +${r.dueSeconds}s` : '',
    r.dueCallable !== null ? `due ${r.dueCallable}` : '',
    r.giveUpAfterSeconds !== null ? `gives up after ${r.giveUpAfterSeconds}s` : '',
  ].filter(Boolean);
  return {
    key: r.key,
    kind: r.kind === 'delivery' ? `delivery (${cell(r.transport ?? '')})` : 'handler',
    mode: r.mode,
    site: r.site,
    lane: r.lane,
    maxAttempts: String(r.maxAttempts),
    leaseSeconds: r.leaseSeconds === null ? 'default' : String(r.leaseSeconds),
    timeoutSeconds: r.timeoutSeconds === null ? 'default' : String(r.timeoutSeconds),
    backoff: base === 'default' && cap === 'default' ? 'default' : `${base} to ${cap}`,
    scheduling: scheduling.length ? cell(scheduling.join(', ')) : 'on record',
    location: r.location === null ? '—' : `\`${r.location}\``,
  };
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
