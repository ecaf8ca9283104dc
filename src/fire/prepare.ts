import type { ZodType } from 'zod';
import type { EncodedJson } from '../codec/json.js';
import {
  CODEC_HEADER,
  jsonCodec,
  type PayloadCodec,
  rememberCodec,
} from '../codec/payload-codec.js';
import { closestName, formatConfigPath } from '../declare/config-path.js';
import type { OutboxConfig } from '../declare/define-outbox.js';
import type { JsonValue } from '../declare/types.js';
import { ValidationError } from '../errors/outbox-error.js';
import { checkColumns, columnValuesOf, columnView } from '../event-columns/values.js';
import type { ScopeFrame } from '../scope/frame.js';
import { currentFrame } from '../scope/frame.js';
import { checkSuppressedNames, suppressionOf } from '../scope/suppressed.js';
import { tenantProblem } from '../scope/tenant.js';
import { scopedKey, TENANT_KEY_SEPARATOR } from '../storage/tenant-keys.js';
import { newEventUuid } from './event-uuid.js';
import type { FireMessage, PreparedEvent } from './types.js';

/** The longest idempotency or ordering key the columns hold. */
const MAX_KEY = 255;

/**
 * Step 1 of `fire()`: validate and encode every message, with no I/O, so bad input throws
 * before the first statement — nothing is written and the caller's transaction stays
 * usable. Every message is checked before any is written.
 *
 * The attribution scope is read here, ONCE per call (one `AsyncLocalStorage.getStore()`,
 * nothing more when no block is set): each row records the scope's actor key, its
 * correlation id (or, with none, the event's own UUID: it starts a chain) and the parent
 * a receiver's `causedBy` set; the scope's data joins the headers (`outbox-scope-<name>`,
 * a header the call names wins). An event a `suppressed()` block names is marked with its
 * reason, and its route is emptied: A SUPPRESSED EVENT IS OWED TO NOBODY, so planning
 * writes no delivery row, no inline or onCommit receiver runs and no wakeup is signalled.
 *
 * @param where the call, for messages: `fire()`, or `fireMany()` (indexed per message).
 * @throws {ValidationError} naming the message and the path at fault.
 */
export function prepareEvents(
  config: OutboxConfig,
  messages: readonly FireMessage[],
  now: Date,
  where: string,
  encoded?: readonly (string | undefined)[],
): PreparedEvent[] {
  const frame = currentFrame();
  if (frame && frame.suppressions.length > 0)
    checkSuppressedNames(frame.suppressions, config, where);
  return messages.map((m, i) =>
    prepareEvent(
      config,
      m,
      now,
      messages.length > 1 ? `${where}[${i}]` : where,
      frame,
      encoded?.[i],
    ),
  );
}

/**
 * @param encoded the payload's JSON text when the caller already checked the payload
 * against its event's schema and encoded it (change capture, whose envelopes it builds
 * of values it has typed: see src/capture/write.ts): the payload is then taken as the
 * schema's output, unparsed, and not encoded again. Undefined: parsed and encoded here.
 */
function prepareEvent(
  config: OutboxConfig,
  message: FireMessage,
  now: Date,
  where: string,
  frame: ScopeFrame | undefined,
  encoded?: string,
): PreparedEvent {
  const route = config.route(message.name);
  if (!route) {
    const hint = closestName(
      String(message.name),
      config.eventList.map((e) => e.name),
    );
    throw new ValidationError(
      `${where}: unknown event ${JSON.stringify(message.name)}${hint ? ` — did you mean "${hint}"?` : ''}; declare it in defineOutbox({ events })`,
      { path: 'name' },
    );
  }
  const parsed: { success: true; data: unknown } | ReturnType<ZodType['safeParse']> =
    encoded === undefined
      ? route.event.schema.safeParse(message.payload)
      : { success: true, data: message.payload };
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = formatConfigPath(['payload', ...issue.path]);
    const more =
      parsed.error.issues.length > 1 ? ` (and ${parsed.error.issues.length - 1} more)` : '';
    throw new ValidationError(
      `${where}: ${message.name} ${path} ${issue.message}${more}; nothing was written`,
      { path, cause: parsed.error },
    );
  }
  const given = (message.headers ?? {}) as Record<string, JsonValue>;
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    throw new ValidationError(`${where}: headers must be an object of name → JSON value`, {
      path: 'headers',
    });
  }
  // defineOutbox checked that every event's codec is one of the outbox's.
  const codec = route.event.codec === 'json' ? jsonCodec : config.codecs.get(route.event.codec)!;
  let headers = frame?.headers ? { ...frame.headers, ...given } : given;
  for (const name of Object.keys(headers)) {
    if (name.trim() === '') {
      throw new ValidationError(
        `${where}: headers has an empty name; every header needs a non-empty name`,
        { path: 'headers' },
      );
    }
    if (name === CODEC_HEADER) {
      throw new ValidationError(
        `${where}: headers names "${CODEC_HEADER}", which is the outbox's own: it records the codec a row was written with (${message.name} uses "${route.event.codec}"); name your header otherwise`,
        { path: `headers.${CODEC_HEADER}` },
      );
    }
  }
  // A row written by another codec than json says which (see src/codec/payload-codec.ts).
  if (codec !== jsonCodec) {
    headers = { ...headers, [CODEC_HEADER]: codec.name };
    rememberCodec(headers, codec); // so getBody(firedEvent) encodes with it
  }
  const tenant = tenantOf(config, message, frame, where);
  checkKey(message.idempotencyKey, 'idempotencyKey', where, tenant);
  checkKey(message.orderingKey, 'orderingKey', where, tenant);
  const occurredAt = message.occurredAt ?? now;
  if (!(occurredAt instanceof Date) || Number.isNaN(occurredAt.getTime())) {
    throw new ValidationError(
      `${where}: occurredAt must be a valid Date (got ${String(message.occurredAt)})`,
      { path: 'occurredAt' },
    );
  }
  const retention = route.event.retention;
  if (
    message.idempotencyKey !== undefined &&
    (retention === 'succeeded' || retention === 'settled')
  ) {
    throw new ValidationError(
      `${where}: ${message.name} is deleted once consumed (retention "${retention}"), so an idempotencyKey would protect only until the prune; drop the key or keep the event for a window`,
      { path: 'idempotencyKey' },
    );
  }
  const payload =
    encoded === undefined
      ? encode(parsed.data, 'payload', where, message.name, codec)
      : { text: encoded, reshaped: false };
  if (payload.reshaped) checkDecodes(route.event.schema, payload.text, where, message.name, codec);
  const columns = checkColumns(config.eventColumns, message.columns, `${where}: ${message.name}`);
  const uuid = newEventUuid();
  const scope = frame?.scope;
  const suppression =
    frame && frame.suppressions.length > 0
      ? suppressionOf(frame.suppressions, route.event.name)
      : null;
  return {
    route: suppression ? route.silenced : route,
    payload: parsed.data,
    headers,
    suppression,
    ...(config.eventColumns.length > 0
      ? { columnView: columnView(config.eventColumns, columns) }
      : {}),
    row: {
      uuid,
      name: route.event.name,
      version: route.event.version,
      payload: payload.text,
      headers: isEmpty(headers) ? '{}' : encode(headers, 'headers', where, message.name).text,
      orderingKey: scopedKey(tenant, message.orderingKey ?? null),
      idempotencyKey: scopedKey(tenant, message.idempotencyKey ?? null),
      occurredAt,
      recordedAt: now,
      retentionSeconds: typeof retention === 'object' ? Math.round(retention.days * 86_400) : null,
      deleteWhen: typeof retention === 'string' ? retention : null,
      actor: scope?.actorKey ?? null,
      correlationId: scope?.correlationId ?? uuid,
      causedBy: scope?.causedBy ?? null,
      suppressedReason: suppression?.reason ?? null,
      tenant,
      // Written in the event's INSERT (the store was made with the declared columns).
      ...(columns ? { columnValues: columnValuesOf(columns) } : {}),
    },
  };
}

/**
 * The event's tenant: the message's own (`null` names none), else the scope's. Refused
 * on an outbox without tenancy, whichever named it, so an event meant for a tenant is never
 * recorded as everyone's.
 */
function tenantOf(
  config: OutboxConfig,
  message: FireMessage,
  frame: ScopeFrame | undefined,
  where: string,
): string | null {
  const given = message.tenant;
  const tenant = given === undefined ? (frame?.scope.tenant ?? null) : given;
  if (tenant === null) return null;
  if (config.settings.tenancy === 'none') {
    throw new ValidationError(
      `${where}: ${message.name} names the tenant ${JSON.stringify(tenant)}${given === undefined ? ' (from the withTenant() block around the call)' : ''}, but this outbox keeps no tenants; declare defineOutbox({ settings: { tenancy: 'column' } }) and run npx outbox migrate, or fire it without one; nothing was written`,
      { path: 'tenant' },
    );
  }
  const problem = tenantProblem(tenant);
  if (problem)
    throw new ValidationError(`${where}: ${message.name} tenant ${problem}; nothing was written`, {
      path: 'tenant',
    });
  return tenant;
}

/**
 * A plain object with no enumerable key: its JSON is `{}`, what the codec would give
 * (most events' headers), without a replacer call.
 */
function isEmpty(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const _ in value) return false;
  return true;
}

/** The codec's refusal, told which call and event it is about. */
function encode(
  value: unknown,
  root: string,
  where: string,
  name: string,
  codec: PayloadCodec = jsonCodec,
): EncodedJson {
  try {
    return codec.encode(value, root);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new ValidationError(`${where}: ${name} ${error.message}`, {
      path: error.path,
      cause: error.cause,
    });
  }
}

/**
 * A key is 1 to 255 characters; a tenant's is stored behind its tenant and a separator
 * (storage/tenant-keys.ts), so it has that much less room and may not hold the separator.
 */
function checkKey(value: unknown, name: string, where: string, tenant: string | null): void {
  if (value === undefined) return;
  const max = tenant === null ? MAX_KEY : MAX_KEY - tenant.length - 1;
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new ValidationError(
      `${where}: ${name} must be a string of 1 to ${max} characters${tenant === null ? '' : ` (${MAX_KEY} less the tenant ${JSON.stringify(tenant)} and a separator)`} (got ${JSON.stringify(value)})`,
      { path: name },
    );
  }
  if (tenant !== null && value.includes(TENANT_KEY_SEPARATOR)) {
    throw new ValidationError(
      `${where}: ${name} of a tenant's event must not contain U+001F, the separator of its stored form (got ${JSON.stringify(value)})`,
      { path: name },
    );
  }
}

/**
 * A payload the codec reshaped (a `Date` became text, an undefined property was left out…)
 * must still be one its schema accepts, or every delivery would fail to decode it: check
 * the encoded form the way the relay's decoder will. Only reshaped payloads pay for this.
 */
function checkDecodes(
  schema: ZodType,
  text: string,
  where: string,
  name: string,
  codec: PayloadCodec,
): void {
  let decoded: unknown;
  try {
    decoded = codec.decode(JSON.parse(text));
  } catch (error) {
    // A codec of the app's that cannot read back what it just wrote.
    throw new ValidationError(
      `${where}: ${name} payload would not decode once stored: the codec ${codec.name} cannot read back what it wrote (${(error as Error).message}); nothing was written`,
      { path: 'payload', cause: error },
    );
  }
  const again = schema.safeParse(decoded);
  if (again.success) return;
  const issue = again.error.issues[0];
  const path = formatConfigPath(['payload', ...issue.path]);
  if (codec !== jsonCodec) {
    const hint =
      codec.name === 'superjson'
        ? ' — an instance of a class superjson does not know comes back as a plain object'
        : '';
    throw new ValidationError(
      `${where}: ${name} ${path} would not decode once stored: as ${codec.name} stores it, it is refused by its schema (${issue.message})${hint}; nothing was written`,
      { path, cause: again.error },
    );
  }
  throw new ValidationError(
    `${where}: ${name} ${path} would not decode once stored: as JSON it is refused by its schema (${issue.message}). A Date is stored as ISO text (use z.coerce.date()), a bigint as decimal text, bytes as base64, and a property set to undefined is left out (leave the key out or make it optional); nothing was written`,
    { path, cause: again.error },
  );
}
