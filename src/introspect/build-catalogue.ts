import type { OutboxConfig, ResolvedEvent, ResolvedReceiver } from '../declare/define-outbox.js';
import {
  CATALOGUE_FORMAT,
  type Catalogue,
  type CatalogueEvent,
  type CatalogueReceiver,
} from './catalogue-types.js';
import { compareText, payloadFields, payloadJsonSchema } from './payload-schema.js';

const SECONDS_PER_DAY = 86_400;

/**
 * Describe every declared event, its payload shape and its receivers, as plain data.
 *
 * Generated from the declarations rather than maintained beside them, so it cannot drift.
 * Sorted by name throughout: a catalogue is written to a file and diffed against the last
 * one, and import order is not a difference. Wildcard receivers are listed once, in their
 * own section, not under each event they receive (which is every event).
 *
 * `location` is left null: only `npx outbox codegen`, which reads the source, knows where
 * a handler lives.
 *
 * @throws {ConfigurationError} when an event's schema cannot be described as JSON Schema.
 */
export function buildCatalogue(config: OutboxConfig): Catalogue {
  const receivers = [...config.receivers].sort((a, b) => compareText(a.key, b.key));
  const events = [...config.eventList]
    .sort((a, b) => compareText(a.name, b.name))
    .map((event) =>
      catalogueEvent(
        event,
        receivers.filter((r) => !r.wildcard && r.event === event.name),
      ),
    );
  return {
    format: CATALOGUE_FORMAT,
    events,
    wildcardReceivers: receivers.filter((r) => r.wildcard).map(catalogueReceiver),
  };
}

function catalogueEvent(event: ResolvedEvent, receivers: ResolvedReceiver[]): CatalogueEvent {
  const schema = payloadJsonSchema(event.name, event.schema);
  const retention = event.retention;
  return {
    name: event.name,
    version: event.version,
    description: event.description ?? null,
    retentionSeconds:
      typeof retention === 'object' ? Math.round(retention.days * SECONDS_PER_DAY) : null,
    deleteWhen: typeof retention === 'string' ? retention : null,
    migratesOlderRows: false,
    fields: payloadFields(schema),
    schema,
    receivers: receivers.map(catalogueReceiver),
  };
}

/** One receiver as published. Exported for codegen, which adds the location. */
export function catalogueReceiver(r: ResolvedReceiver): CatalogueReceiver {
  return {
    key: r.key,
    event: r.event ?? null,
    mode: r.mode,
    kind: r.kind,
    transport: r.kind === 'delivery' ? (r.delivery?.name ?? r.key) : null,
    site: 'relay',
    lane: 'default',
    maxAttempts: r.maxAttempts,
    leaseSeconds: r.leaseSeconds ?? null,
    timeoutSeconds: r.timeoutSeconds ?? null,
    backoff: {
      baseSeconds: r.backoff.baseSeconds ?? null,
      capSeconds: r.backoff.capSeconds ?? null,
    },
    targets: null,
    dueSeconds: null,
    dueCallable: null,
    giveUpAfterSeconds: null,
    location: null,
  };
}
