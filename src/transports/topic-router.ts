/**
 * `topicRouter()`: one transport that sends each event through the transport its topic
 * routes to (the topic-outbox reference's `TopicRouter`), so one wildcard receiver can
 * send loans to Kafka and notifications to a webhook.
 *
 * A topic named exactly takes its route, else the first pattern it matches in the order
 * given, else the default. An event no route takes FAILS — retried and dead-lettered like
 * any failure, never marked delivered: a topic nobody routed is a configuration gap an
 * operator must see, not an event to drop silently.
 */
import { topicPatternProblem } from '../declare/define-outbox.js';
import { checkOptionNames, optionNames } from '../declare/option-keys.js';
import type {
  DeliveryContext,
  DeliveryItem,
  DeliveryResult,
  OutboxDelivery,
  OutboxEvent,
} from '../declare/types.js';
import { ConfigurationError, DeliveryError } from '../errors/outbox-error.js';
import { RetryAfter } from '../errors/signals.js';

/** A route's destination: a transport, or a function sending one event. */
export type RouteDestination =
  | OutboxDelivery
  | ((event: OutboxEvent, context: DeliveryContext) => unknown | Promise<unknown>);

/** Options of {@link topicRouter}. */
export interface TopicRouterOptions {
  /** Where an event no route takes goes; without it such an event fails. */
  readonly default?: RouteDestination;
  /** A name for logs and the catalogue. @defaultValue `'topicRouter'` */
  readonly name?: string;
}

/** The router: an `OutboxDelivery`, and which destination an event name goes to. */
export interface TopicRouter extends OutboxDelivery {
  deliver(event: OutboxEvent, context: DeliveryContext): Promise<void>;
  deliverBatch(
    items: readonly DeliveryItem[],
    options: { readonly signal: AbortSignal },
  ): Promise<readonly DeliveryResult[]>;
  close(): Promise<void>;
  /** The destination `eventName` is routed to, or undefined when no route takes it. */
  routeOf(eventName: string): OutboxDelivery | undefined;
}

/** Every option of {@link topicRouter}, to refuse a misspelt one. */
const TOPIC_ROUTER_OPTIONS = optionNames<TopicRouterOptions>()(['default', 'name']);

/**
 * Route each event to a transport by its name: `routes` maps exact names
 * (`'billing.InvoicePaid'`) and topic patterns (`'library.loan.*'`: a prefix ending in
 * one `*`, as receivers' patterns) to a destination. A batch is split per destination
 * (each gets one `deliverBatch` of its items, all destinations at once) and the results
 * put back in item order. `close()` closes every destination.
 *
 * @example
 * ```ts
 * receiver('*', {
 *   deliver: topicRouter(
 *     { 'library.loan.*': kafka({ brokers }), 'notify.*': webhook({ url, secret }) },
 *     { default: redisStreams({ url: 'redis://localhost:6379' }) },
 *   ),
 * });
 * ```
 */
export function topicRouter(
  routes: Readonly<Record<string, RouteDestination>>,
  options: TopicRouterOptions = {},
): TopicRouter {
  checkOptionNames('topicRouter', options, TOPIC_ROUTER_OPTIONS);
  if (routes === null || typeof routes !== 'object')
    throw new ConfigurationError('topicRouter(routes) needs an object of topic → transport');
  const exact = new Map<string, OutboxDelivery>();
  const patterns: { prefix: string; destination: OutboxDelivery }[] = [];
  const all = new Set<OutboxDelivery>();
  for (const [topic, value] of Object.entries(routes)) {
    const destination = normalise(value, `topicRouter: routes["${topic}"]`);
    all.add(destination);
    if (topic === '') throw new ConfigurationError('topicRouter: a route needs a topic (got "")');
    if (topic.includes('*') || topic.includes('?')) {
      const problem = topicPatternProblem(topic);
      if (problem) throw new ConfigurationError(`topicRouter: routes["${topic}"]: ${problem}`);
      patterns.push({ prefix: topic.slice(0, -1), destination });
    } else {
      exact.set(topic, destination);
    }
  }
  const fallback =
    options.default === undefined ? undefined : normalise(options.default, 'topicRouter: default');
  if (fallback) all.add(fallback);
  const name = options.name ?? 'topicRouter';

  const routeOf = (eventName: string): OutboxDelivery | undefined =>
    exact.get(eventName) ??
    patterns.find((p) => eventName.startsWith(p.prefix))?.destination ??
    fallback;

  const unrouted = (item: DeliveryItem): DeliveryResult => ({
    status: 'failed',
    error: new DeliveryError(
      `${name}: no route takes topic "${item.event.name}" (routes: ${Object.keys(routes).join(', ') || 'none'}; no default)`,
      { deliveryId: item.context.deliveryId ?? '', receiverKey: item.context.receiverKey },
    ),
  });

  const deliverBatch = async (
    items: readonly DeliveryItem[],
    { signal }: { readonly signal: AbortSignal },
  ): Promise<DeliveryResult[]> => {
    const results: DeliveryResult[] = new Array(items.length);
    const split = new Map<OutboxDelivery, number[]>();
    items.forEach((item, i) => {
      const destination = routeOf(item.event.name);
      if (!destination) {
        results[i] = unrouted(item);
        return;
      }
      const indexes = split.get(destination) ?? [];
      indexes.push(i);
      split.set(destination, indexes);
    });
    await Promise.all(
      [...split].map(async ([destination, indexes]) => {
        const own = await sendThrough(
          destination,
          indexes.map((i) => items[i]),
          signal,
        );
        indexes.forEach((itemIndex, j) => {
          results[itemIndex] = own[j];
        });
      }),
    );
    return results;
  };

  let closing: Promise<void> | undefined;
  return {
    name,
    routeOf,
    deliverBatch,
    async deliver(event, context) {
      const [result] = await deliverBatch([{ event, context }], {
        signal: context.signal ?? new AbortController().signal,
      });
      if (result.status === 'sent') return;
      if (result.status === 'retryAfter')
        throw new RetryAfter(result.seconds, {
          message: result.error instanceof Error ? result.error.message : undefined,
          counts: result.counts ?? true,
        });
      throw result.error;
    },
    close() {
      closing ??= closeAll([...all]);
      return closing;
    },
  };
}

/** One destination's share of a batch: its own results, one per item, in its item order. */
async function sendThrough(
  destination: OutboxDelivery,
  items: readonly DeliveryItem[],
  signal: AbortSignal,
): Promise<readonly DeliveryResult[]> {
  if (destination.deliverBatch) {
    try {
      const results = await destination.deliverBatch(items, { signal });
      if (results === undefined) return items.map(() => SENT);
      if (results.length === items.length) return results;
      const error = new TypeError(
        `topicRouter: ${destination.name ?? 'a destination'}'s deliverBatch resolved to ${results.length} results for ${items.length} items; it must resolve to one per item`,
      );
      return items.map(() => ({ status: 'failed', error }));
    } catch (error) {
      return items.map(() => ({ status: 'failed', error }));
    }
  }
  // One at a time, in item order: one ordering key's events keep their order.
  const results: DeliveryResult[] = [];
  for (const { event, context } of items) {
    if (signal.aborted) {
      results.push({ status: 'failed', error: signal.reason });
      continue;
    }
    try {
      await destination.deliver!(event, { ...context, signal: context.signal ?? signal });
      results.push(SENT);
    } catch (error) {
      results.push(
        error instanceof RetryAfter
          ? { status: 'retryAfter', seconds: error.seconds, error, counts: error.counts }
          : { status: 'failed', error },
      );
    }
  }
  return results;
}

const SENT: DeliveryResult = { status: 'sent' };

function normalise(value: RouteDestination, where: string): OutboxDelivery {
  if (typeof value === 'function')
    return { name: value.name || where, deliver: async (e, c) => void (await value(e, c)) };
  if (
    value === null ||
    typeof value !== 'object' ||
    (typeof value.deliver !== 'function' && typeof value.deliverBatch !== 'function')
  )
    throw new ConfigurationError(
      `${where} must be a transport (with deliver or deliverBatch) or a function of the event`,
    );
  return value;
}

/** Close every destination, each even when another fails; the failures together. */
async function closeAll(destinations: readonly OutboxDelivery[]): Promise<void> {
  const outcomes = await Promise.allSettled(destinations.map((d) => d.close?.()));
  const errors = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason] : []));
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1)
    throw new AggregateError(errors, `topicRouter: ${errors.length} destinations failed to close`);
}
