import type { OutboxConfig } from '../src/declare/define-outbox.js';

/** The TypeScript names generated for one event. */
export interface EventNames {
  /** The declared name, `shop.OrderPlaced`. */
  readonly event: string;
  /** The stem of its types, `OrderPlaced` (`ShopOrderPlaced` when two events share a stem). */
  readonly type: string;
  /** Its emitter, `orderPlaced`. */
  readonly emitter: string;
}

/**
 * Name the generated types and emitters of every event, deterministically.
 *
 * The stem is the last dotted segment in PascalCase (`shop.OrderPlaced` → `OrderPlaced`,
 * `billing.invoice-paid` → `InvoicePaid`), because that is how people say the event's
 * name. Events whose stems collide all use their whole name instead (`ShopOrderPlaced`,
 * `BillingOrderPlaced`), so adding an event never renames the types of an unrelated one
 * and no stem depends on declaration order. A clash that still remains gets a numeric
 * suffix in name order.
 *
 * `preferred` gives some events another stem: a captured topic's last segment is its
 * operation (`shop.order.updated`), so its stem is the model's and the operation's
 * (`OrderUpdated`, see {@link captureStems}).
 */
export function eventNames(
  names: readonly string[],
  preferred: ReadonlyMap<string, string> = new Map(),
): EventNames[] {
  const sorted = [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const short = new Map(
    sorted.map((n) => [n, preferred.get(n) ?? pascal(n.split('.').pop() ?? n)]),
  );
  const counts = new Map<string, number>();
  for (const stem of short.values()) counts.set(stem, (counts.get(stem) ?? 0) + 1);
  const used = new Set<string>();
  return sorted.map((event) => {
    const stem = short.get(event) ?? '';
    let type = counts.get(stem) === 1 ? stem : pascal(event);
    for (let i = 2; used.has(type); i++) type = `${pascal(event)}${i}`;
    used.add(type);
    return { event, type, emitter: camel(type) };
  });
}

/** `order-placed` → `OrderPlaced`, `shop.OrderPlaced` → `ShopOrderPlaced`, `2fa` → `E2fa`. */
export function pascal(text: string): string {
  const out = text
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part[0].toUpperCase() + part.slice(1))
    .join('');
  if (out === '') return 'Event';
  return /^[0-9]/.test(out) ? `E${out}` : out;
}

/** `OrderPlaced` → `orderPlaced`, `URLChanged` → `urlChanged`. */
export function camel(text: string): string {
  const lead = /^[A-Z]+(?=[A-Z][a-z]|$)|^[A-Z]/.exec(text)?.[0] ?? '';
  return lead.toLowerCase() + text.slice(lead.length);
}

/** The stem of each captured topic: the model's name and the operation (`OrderUpdated`). */
export function captureStems(config: OutboxConfig): Map<string, string> {
  const stems = new Map<string, string>();
  for (const capture of config.captures ?? []) {
    for (const [operation, topic] of Object.entries(capture.topics)) {
      if (topic) stems.set(topic, `${pascal(capture.model.name)}${pascal(operation)}`);
    }
  }
  return stems;
}

/** The stem of a captured model's row type: `Order` → `OrderRow`. */
export function rowTypeName(modelName: string): string {
  return `${pascal(modelName)}Row`;
}
