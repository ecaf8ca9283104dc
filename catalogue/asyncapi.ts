/**
 * The catalogue as an AsyncAPI 3.0.0 document (`npx outbox catalogue asyncapi`).
 *
 * AsyncAPI is what event-driven tooling reads (docs sites, code generators, event
 * catalogues, schema registries). The document describes the outbox as the application:
 * it **sends** each declared event (the application firing it, `outbox.fire()`) and
 * **receives** it in each durable receiver (the relay running it, or forwarding it through a
 * transport). Built from the catalogue alone, so it says exactly what the committed
 * `catalogue/catalogue.json` says and can be regenerated, committed and diffed beside it.
 *
 * The mapping:
 *
 * | catalogue                      | AsyncAPI                                                            |
 * | ------------------------------ | ------------------------------------------------------------------- |
 * | event                          | a channel (address: the event's name, which is its topic) with one  |
 * |                                | message (payload: its JSON Schema; headers: {@link OUTBOX_HEADERS}) |
 * | the application firing it      | a `send` operation per channel                                      |
 * | durable receiver of one event  | a `receive` operation, named by its key                             |
 * | durable wildcard receiver      | a `receive` operation on every channel it matches today, and the    |
 * |                                | declaration once in `x-outboxkit-wildcards`                         |
 * | `inline`/`onCommit` receiver   | listed on the `send` operation (`x-outboxkit-in-process-receivers`) |
 *
 * Why wildcards become operations: a tool reading the document (a docs page per channel, a
 * generator) sees only operations, so a Kafka bridge declared for `AnyEvent` would be
 * invisible under every event it forwards. The catalogue lists a wildcard once because a
 * pattern is matched when an event fires and a list under today's events goes stale; this
 * document is regenerated from the catalogue whenever it changes, so its expansion is as
 * current as the rest of it, and `x-outboxkit-wildcards` keeps the declaration (a pattern
 * matching no event yet included).
 *
 * Why in-process receivers are not operations: an `inline` or `onCommit` receiver runs
 * inside (or right after) the firing transaction in the firing process; it never takes the
 * message off the channel, has no delivery row, no retry and no at-least-once. Publishing it
 * as a `receive` operation would promise a delivery contract it does not have.
 *
 * Deterministic: channels, messages and operations sorted, no timestamps, so the document
 * can be committed and a diff shows only real changes.
 */
import { CODEC_HEADER } from '../src/codec/payload-codec.js';
import {
  type Catalogue,
  type CatalogueEvent,
  type CatalogueReceiver,
  compareText,
} from '../src/introspect/index.js';
import { type JsonSchemaNode, toAsyncApiSchema } from './asyncapi-schema.js';
import { formatDuration } from './format-duration.js';
import { loadYaml } from './toolchain.js';

/** The AsyncAPI version written. */
export const ASYNCAPI_VERSION = '3.0.0';

/**
 * The message headers every transport sends with an event, as the AsyncAPI document names
 * them. Exported so a consumer (or a test) reads the same names the document publishes.
 *
 * - `eventId`: the event's UUIDv7, what a consumer deduplicates on (at least once means a
 *   repeat is possible).
 * - `topic`: the event's name, which is its topic (a consumer of a shared broker topic or a
 *   webhook endpoint tells events apart by it).
 * - `version`: the payload's schema version, as decimal text, so a consumer can pick the
 *   schema to read a message with.
 * - `traceparent` / `tracestate`: the W3C trace context written at `fire()` when tracing is
 *   on (`outboxkit/opentelemetry`), so a consumer continues the trace.
 * - `scopePrefix`: data of an `attributed()` block travels as `outbox-scope-<name>`.
 */
export const OUTBOX_HEADERS = {
  eventId: 'outbox-event-id',
  topic: 'outbox-topic',
  version: 'outbox-event-version',
  traceparent: 'traceparent',
  tracestate: 'tracestate',
  scopePrefix: 'outbox-scope-',
} as const;

/** Where the document's title and version come from when not given. */
export interface AsyncApiOptions {
  /** `info.title`: the project's `package.json` name by default (the CLI reads it). */
  readonly title: string;
  /** `info.version`: the project's `package.json` version by default (the CLI reads it). */
  readonly version: string;
}

/** An AsyncAPI document as plain JSON values. */
export type AsyncApiDocument = Readonly<Record<string, unknown>>;

/**
 * Build the AsyncAPI 3.0.0 document of a catalogue (see this module's header for the
 * mapping). Pure: the same catalogue and options give the same document, key for key.
 */
export function buildAsyncApi(catalogue: Catalogue, options: AsyncApiOptions): AsyncApiDocument {
  const channelIds = new IdAllocator();
  const ids = new Map<string, string>();
  for (const e of sortedBy(catalogue.events, (e) => e.name))
    ids.set(e.name, channelIds.take(e.name));
  const idOf = (name: string) => ids.get(name) as string;

  const wildcards = sortedBy(catalogue.wildcardReceivers, (r) => r.key);
  const channels: Record<string, unknown> = {};
  const messages: Record<string, unknown> = {};
  const operations: { id: string; operation: Record<string, unknown> }[] = [];
  const operationIds = new IdAllocator();

  const events = sortedBy(catalogue.events, (e) => e.name);
  for (const event of events) {
    const id = idOf(event.name);
    const own = sortedBy(event.receivers, (r) => r.key);
    const matching = wildcards.filter((r) => wildcardMatches(r, event.name));
    channels[id] = channel(event, id);
    messages[id] = message(event, id);
    const ref = { $ref: `#/channels/${id}` };
    const messageRefs = [{ $ref: `#/channels/${id}/messages/${id}` }];
    const inProcess = [...own, ...matching].filter((r) => r.mode !== 'durable');
    operations.push({
      id: operationIds.take(`send__${id}`),
      operation: {
        action: 'send',
        channel: ref,
        title: `fire ${event.name}`,
        summary: `The application records ${event.name} (version ${event.version}) in its transactional outbox.`,
        description: sendDescription(event, [...own, ...matching]),
        messages: messageRefs,
        'x-outboxkit-in-process-receivers': sortedBy(inProcess, (r) => r.key).map((r) => ({
          key: r.key,
          mode: r.mode,
          pattern: r.pattern,
          wildcard: r.event === null,
        })),
      },
    });
    for (const r of own.filter((r) => r.mode === 'durable')) {
      operations.push({
        id: operationIds.take(r.key),
        operation: receiveOperation(r, event, ref, messageRefs),
      });
    }
    for (const r of matching.filter((r) => r.mode === 'durable')) {
      operations.push({
        id: operationIds.take(`${r.key}__${id}`),
        operation: receiveOperation(r, event, ref, messageRefs),
      });
    }
  }

  return {
    asyncapi: ASYNCAPI_VERSION,
    info: {
      title: options.title,
      version: options.version,
      description: [
        `The events ${options.title} records in its transactional outbox (outboxkit): one channel per event, its address the event's name (its topic).`,
        "Each channel's `send` operation is the application firing the event; each `receive` operation is a durable receiver the relay delivers it to, at least once, in order per ordering key (named by its receiver key; a wildcard's is `<key>__<event>`, the send operation `send__<event>`).",
        `Generated by \`npx outbox catalogue asyncapi\` from the catalogue (format ${catalogue.format}); do not edit.`,
      ].join('\n\n'),
    },
    defaultContentType: 'application/json',
    channels,
    operations: Object.fromEntries(
      operations.sort((a, b) => compareText(a.id, b.id)).map((o) => [o.id, o.operation]),
    ),
    components: { messages },
    'x-outboxkit-wildcards': wildcards.map((r) => ({
      ...r,
      matches: events.filter((e) => wildcardMatches(r, e.name)).map((e) => e.name),
    })),
  };
}

/** The output formats of {@link renderAsyncApi}. */
export type AsyncApiFormat = 'yaml' | 'json';

/**
 * Render the document as YAML (the default; what `asyncapi.yaml` is by convention) or JSON,
 * ending in exactly one newline. Keys keep the order {@link buildAsyncApi} gives them, and
 * long strings are never folded, so a changed description is a one-line diff.
 */
export function renderAsyncApi(
  catalogue: Catalogue,
  options: AsyncApiOptions & { readonly format?: AsyncApiFormat },
): string {
  const document = buildAsyncApi(catalogue, options);
  if (options.format === 'json') return `${JSON.stringify(document, null, 2)}\n`;
  return `${loadYaml().stringify(document, { lineWidth: 0, aliasDuplicateObjects: false }).trimEnd()}\n`;
}

function channel(event: CatalogueEvent, id: string): Record<string, unknown> {
  return {
    address: event.name,
    title: event.name,
    ...(event.description === null ? {} : { description: event.description }),
    messages: { [id]: { $ref: `#/components/messages/${id}` } },
  };
}

function message(event: CatalogueEvent, id: string): Record<string, unknown> {
  const title = `${event.name} v${event.version}`;
  return {
    name: event.name,
    title,
    summary:
      event.description === null ? `${title}.` : `${event.description} (version ${event.version})`,
    description: messageDescription(event),
    contentType: 'application/json',
    headers: headers(event),
    payload: toAsyncApiSchema(
      event.schema as JsonSchemaNode,
      `#/components/messages/${id}/payload`,
    ),
    'x-outboxkit-event': {
      name: event.name,
      version: event.version,
      retentionSeconds: event.retentionSeconds,
      deleteWhen: event.deleteWhen,
      migratesOlderRows: event.migratesOlderRows,
    },
  };
}

function messageDescription(event: CatalogueEvent): string {
  const retention =
    event.deleteWhen !== null
      ? `deleted once ${event.deleteWhen}`
      : event.retentionSeconds !== null
        ? `kept ${formatDuration(event.retentionSeconds)}`
        : 'kept for settings.retentionDays';
  return [
    `Payload version ${event.version}: ${bodyDescription(event.codec ?? 'json')}`,
    event.migratesOlderRows
      ? 'Rows of older versions are upgraded when read (event({ upgrade })).'
      : 'Rows of older versions are read as they are.',
    `Recorded events are ${retention}.`,
  ].join(' ');
}

/** What an event's body is, by its codec (the payload schema above describes it). */
function bodyDescription(codec: string): string {
  if (codec === 'json') return "the payload's JSON as the body.";
  if (codec === 'superjson') {
    return "the body is superjson's document { json, meta } (header outbox-codec: superjson): json holds the payload as JSON, meta the types SuperJSON.deserialize restores.";
  }
  return `the body is the document the payload codec "${codec}" writes (header outbox-codec: ${codec}).`;
}

/**
 * The headers of one event's message: the standard ones of {@link OUTBOX_HEADERS}, the
 * topic and version pinned to this event's, `outbox-scope-*`, and any other header the
 * application passes to `fire({ headers })` (which every transport carries, so the schema
 * stays open).
 */
function headers(event: CatalogueEvent): Record<string, unknown> {
  const h = OUTBOX_HEADERS;
  return {
    type: 'object',
    properties: {
      [h.eventId]: {
        type: 'string',
        format: 'uuid',
        pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
        description:
          "The event's UUIDv7, the same on every delivery of it: deduplicate on it (delivery is at least once).",
      },
      [h.topic]: {
        type: 'string',
        const: event.name,
        description: "The event's name, which is its topic.",
      },
      [h.version]: {
        type: 'string',
        const: String(event.version),
        description: "The payload's schema version, as decimal text.",
      },
      [h.traceparent]: {
        type: 'string',
        pattern: '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$',
        description:
          'W3C trace context of the request that fired the event, when tracing is on (outboxkit/opentelemetry).',
      },
      [h.tracestate]: {
        type: 'string',
        description: 'W3C trace state, beside traceparent, when the tracer writes one.',
      },
      // A body written by another codec than json says which (absent: json).
      ...((event.codec ?? 'json') === 'json'
        ? {}
        : {
            [CODEC_HEADER]: {
              type: 'string',
              const: event.codec,
              description: 'The payload codec that wrote the body: how to read it.',
            },
          }),
    },
    required:
      (event.codec ?? 'json') === 'json'
        ? [h.eventId, h.topic]
        : [h.eventId, h.topic, CODEC_HEADER],
    patternProperties: {
      [`^${h.scopePrefix}`]: {
        description: 'Data of an attributed() block around the fire(), one header per name.',
      },
    },
    additionalProperties: {
      description: 'Headers the application passed to fire({ headers }), carried as they are.',
    },
  };
}

function sendDescription(event: CatalogueEvent, receivers: readonly CatalogueReceiver[]): string {
  const durable = sortedBy(
    receivers.filter((r) => r.mode === 'durable'),
    (r) => r.key,
  );
  const inProcess = sortedBy(
    receivers.filter((r) => r.mode !== 'durable'),
    (r) => r.key,
  );
  const lines = [
    `outbox.fire('${event.name}', payload, { transaction }) records the event with the caller's transaction: it exists if and only if the transaction commits.`,
    durable.length > 0
      ? `In the same transaction it writes a delivery row for each durable receiver: ${durable.map((r) => r.key).join(', ')}.`
      : 'No durable receiver: the relay delivers it to nobody.',
  ];
  if (inProcess.length > 0) {
    lines.push(
      `Run in the firing process, not through this channel: ${inProcess
        .map((r) => `${r.key} (${r.mode})`)
        .join(', ')}.`,
    );
  }
  return lines.join(' ');
}

function receiveOperation(
  r: CatalogueReceiver,
  event: CatalogueEvent,
  channelRef: { $ref: string },
  messageRefs: readonly { $ref: string }[],
): Record<string, unknown> {
  const declared =
    r.event !== null
      ? ''
      : r.pattern !== null
        ? ` (declared for the pattern ${r.pattern})`
        : ' (declared for AnyEvent)';
  return {
    action: 'receive',
    channel: channelRef,
    title: r.key,
    summary: `${r.key} receives ${event.name}${declared}.`,
    description: receiverDescription(r),
    messages: messageRefs,
    'x-outboxkit-receiver': r,
  };
}

/** One paragraph of a receiver's lane, mode and timing, in the catalogue's words. */
export function receiverDescription(r: CatalogueReceiver): string {
  const what = r.kind === 'handler' ? 'A handler' : `A transport (${r.transport ?? 'delivery'})`;
  const parts = [
    `${what}, ${r.mode}, on lane ${r.lane} (relays started with ${r.lane === 'default' ? 'no --lane' : `--lane ${r.lane}`}).`,
  ];
  if (r.dueSeconds !== null)
    parts.push(`Due ${formatDuration(r.dueSeconds)} after the event's occurredAt.`);
  else if (r.dueCallable !== null) parts.push(`Due when ${r.dueCallable} says.`);
  else parts.push('Due as soon as the event is recorded.');
  if (r.targets !== null) parts.push(`Fans out: one delivery per target of ${r.targets}.`);
  if (r.eager) parts.push('Also attempted right after commit in the firing process (eager).');
  parts.push(`Up to ${r.maxAttempts} attempt(s), then dead-lettered.`);
  const own: string[] = [];
  if (r.leaseSeconds !== null) own.push(`lease ${r.leaseSeconds}s`);
  if (r.timeoutSeconds !== null) own.push(`timeout ${r.timeoutSeconds}s`);
  if (r.backoff.baseSeconds !== null) own.push(`backoff base ${r.backoff.baseSeconds}s`);
  if (r.backoff.capSeconds !== null) own.push(`backoff cap ${r.backoff.capSeconds}s`);
  if (r.giveUpAfterSeconds !== null)
    own.push(`deferrals given up after ${formatDuration(r.giveUpAfterSeconds)}`);
  if (own.length > 0) parts.push(`Its own ${own.join(', ')}; the settings otherwise.`);
  if (r.location !== null) parts.push(`Declared at ${r.location}.`);
  return parts.join(' ');
}

/**
 * Whether a wildcard receiver is owed events of this name: every event for `AnyEvent`, a
 * prefix match for a pattern (`library.*`). THE SAME RULE as the runtime's (`matches` in
 * src/declare/define-outbox.ts), so the document expands a pattern as the relay will.
 */
export function wildcardMatches(r: CatalogueReceiver, name: string): boolean {
  return r.pattern === null || name.startsWith(r.pattern.slice(0, -1));
}

/**
 * AsyncAPI's component keys (and so a message's id) are letters, digits, `.`, `_` and `-`;
 * the same rule is used for channels and operations, so every id reads the same way. Most
 * names are already ids (`shop.OrderPlaced`, `mail.confirm`); any other character (`:`, a
 * space) becomes `_`, and a name that would take an id already taken gets `_2`, `_3`… in
 * sorted order, so ids are stable for a given catalogue. The name itself is always in the
 * document (`address`, `name`, `title`).
 */
class IdAllocator {
  readonly #taken = new Set<string>();

  take(name: string): string {
    const base = name.replace(/[^A-Za-z0-9._-]/g, '_');
    let id = base;
    for (let n = 2; this.#taken.has(id); n++) id = `${base}_${n}`;
    this.#taken.add(id);
    return id;
  }
}

function sortedBy<T>(items: readonly T[], key: (item: T) => string): T[] {
  return [...items].sort((a, b) => compareText(key(a), key(b)));
}
