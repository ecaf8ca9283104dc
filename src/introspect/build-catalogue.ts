import type { OutboxConfig, ResolvedEvent, ResolvedReceiver } from '../declare/define-outbox.js';
import { bodyJsonSchema } from './body-schema.js';
import { capturedTopics, captureJsonSchema } from './capture-schema.js';
import {
  CATALOGUE_FORMAT,
  type Catalogue,
  type CatalogueEvent,
  type CatalogueReceiver,
} from './catalogue-types.js';
import { compareText, payloadFields } from './payload-schema.js';

const SECONDS_PER_DAY = 86_400;

/**
 * Describe every declared event, its payload shape and its receivers, as plain data.
 *
 * Generated from the declarations rather than maintained beside them, so it cannot drift.
 * Sorted by name throughout: a catalogue is written to a file and diffed against the last
 * one, and import order is not a difference. Wildcard receivers — declared for `AnyEvent`
 * or a topic pattern — are listed once, in their own section with the pattern each was
 * declared for, not under each event they receive.
 *
 * A captured topic (`capture(Model, …)`) is listed like any event, its payload schema the
 * change envelope with `before`/`after` of the model's attributes in their JSON form.
 *
 * An event's `schema` and `fields` describe its message body as its codec writes it (what
 * the row stores and a transport sends): a json event's payload JSON, a superjson event's
 * `{ json, meta }` document, a codec of the app's what its `bodySchema` says (else an
 * opaque body).
 *
 * Works from the config alone. Where only the source can say where a function lives,
 * `npx outbox codegen` fills it in: `location` is left null, and a `targets` or `due`
 * function is published by its name (see {@link CatalogueReceiver.targets}).
 *
 * @throws {ConfigurationError} when an event's schema cannot be described as JSON Schema.
 */
export function buildCatalogue(config: OutboxConfig): Catalogue {
  const receivers = [...config.receivers].sort((a, b) => compareText(a.key, b.key));
  // A captured topic's schema comes from its model's attributes, not from the loose zod
  // schema the runtime decodes it with (see capture-schema.ts).
  const captured = capturedTopics(config.captures ?? []);
  const events = [...config.eventList]
    .sort((a, b) => compareText(a.name, b.name))
    .map((event) => {
      const capture = captured.get(event.name);
      return catalogueEvent(
        config,
        event,
        receivers.filter((r) => !r.wildcard && r.event === event.name),
        capture && captureJsonSchema(capture.capture, capture.operation),
      );
    });
  return {
    format: CATALOGUE_FORMAT,
    events,
    wildcardReceivers: receivers.filter((r) => r.wildcard).map(catalogueReceiver),
    ...((config.eventColumns ?? []).length > 0
      ? {
          eventColumns: config.eventColumns.map((c) => ({
            name: c.name,
            type: c.type,
            index: c.index,
          })),
        }
      : {}),
  };
}

function catalogueEvent(
  config: OutboxConfig,
  event: ResolvedEvent,
  receivers: ResolvedReceiver[],
  capturedSchema?: Readonly<Record<string, unknown>>,
): CatalogueEvent {
  const schema = capturedSchema ?? bodyJsonSchema(event, config.codecs?.get(event.codec));
  const retention = event.retention;
  return {
    name: event.name,
    version: event.version,
    description: event.description ?? null,
    retentionSeconds:
      typeof retention === 'object' ? Math.round(retention.days * SECONDS_PER_DAY) : null,
    deleteWhen: typeof retention === 'string' ? retention : null,
    migratesOlderRows: event.upgrade !== undefined,
    codec: event.codec,
    fields: payloadFields(schema),
    schema,
    receivers: receivers.map(catalogueReceiver),
  };
}

/**
 * One receiver as published, from its resolved declaration. Exported for codegen, which
 * replaces the runtime's stand-ins with `file:line` locations read from the source.
 */
export function catalogueReceiver(r: ResolvedReceiver): CatalogueReceiver {
  return {
    key: r.key,
    event: r.event ?? null,
    pattern: r.pattern ?? null,
    mode: r.mode,
    kind: r.kind,
    transport: r.kind === 'delivery' ? (r.delivery?.name ?? r.key) : null,
    // Where its code runs: the relay (or, eager, also the firing process, which `eager`
    // says), or the task backend's worker.
    site: r.site,
    lane: r.lane,
    eager: r.eager,
    maxAttempts: r.maxAttempts,
    leaseSeconds: r.leaseSeconds ?? null,
    timeoutSeconds: r.timeoutSeconds ?? null,
    backoff: {
      baseSeconds: r.backoff.baseSeconds ?? null,
      capSeconds: r.backoff.capSeconds ?? null,
    },
    targets: r.targets === undefined ? null : functionLabel(r.targets),
    dueSeconds: r.due?.kind === 'delay' ? r.due.seconds : null,
    dueCallable: r.due?.kind === 'at' ? functionLabel(r.due.at) : null,
    giveUpAfterSeconds: r.giveUpAfterSeconds ?? null,
    location: null,
  };
}

/**
 * How the runtime catalogue names a function whose source it cannot read: `function
 * endpointsFor`, or `anonymous function`. Never a `file:line` (codegen's form), and never
 * null, which would publish a fan-out or a scheduled receiver as a plain one.
 */
export function functionLabel(fn: { readonly name: string }): string {
  return fn.name ? `function ${fn.name}` : 'anonymous function';
}
