/**
 * The outside world the shop talks to: a card processor, a mail server and an analytics
 * pipeline. In-memory stand-ins, each behaving like the real thing in the one way the
 * outbox cares about (a declined card, a flaky SMTP server, a sink that sees every event).
 */
import type { OutboxEvent } from '../../src/index.js';

/** The card processor said no, and will keep saying no: retrying cannot help. */
export class CardDeclined extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CardDeclined';
  }
}

/**
 * A card processor. It deduplicates charges on an idempotency key, as Stripe and Adyen do,
 * so a capture retried after a crash charges the card once.
 */
export class PaymentProvider {
  readonly name = 'fakepay';
  readonly #charges = new Map<string, string>();

  /** @param cardLimitCents what any card can be charged at most; above it, a decline. */
  constructor(private readonly cardLimitCents = 500_000) {}

  /** Charge a card; returns the provider's reference. */
  async charge(request: {
    orderId: string;
    amountCents: number;
    idempotencyKey: string;
  }): Promise<string> {
    const known = this.#charges.get(request.idempotencyKey);
    if (known) return known;
    if (request.amountCents > this.cardLimitCents) {
      throw new CardDeclined(
        `${formatCents(request.amountCents)} is over the card's ${formatCents(this.cardLimitCents)} limit`,
      );
    }
    const reference = `ch_${request.orderId}`;
    this.#charges.set(request.idempotencyKey, reference);
    return reference;
  }
}

/** A mail to send. `messageId` lets the mail server drop a duplicate of a retried send. */
export interface Mail {
  readonly messageId: string;
  readonly to: string;
  readonly subject: string;
}

/**
 * A mail server that is flaky on purpose: the first send of every mail whose `flaky(mail)`
 * is true fails with a temporary error, the way SMTP answers `421 try again later`. The
 * second send goes through.
 */
export class Mailer {
  readonly sent: Mail[] = [];
  readonly #refusedOnce = new Set<string>();

  constructor(private readonly flaky: (mail: Mail) => boolean = () => false) {}

  async send(mail: Mail): Promise<void> {
    if (this.flaky(mail) && !this.#refusedOnce.has(mail.messageId)) {
      this.#refusedOnce.add(mail.messageId);
      throw new Error('SMTP 421: service busy, try again later');
    }
    if (this.sent.some((m) => m.messageId === mail.messageId)) return;
    this.sent.push(mail);
  }
}

/** One change of an order's status, as the order history recorded it. */
export interface StatusChange {
  readonly orderId: string;
  readonly from: string;
  readonly to: string;
}

/**
 * An order history (an audit log, a search index): it keeps each status change of an
 * order row, fed by change capture rather than by events the app remembers to fire.
 */
export class OrderHistory {
  readonly changes: StatusChange[] = [];

  record(change: StatusChange): void {
    this.changes.push(change);
  }
}

/** What the analytics pipeline recorded of one event. */
export interface TrackedEvent {
  readonly name: string;
  readonly orderingKey: string | null;
  /** The event's position in the outbox: the order it was fired in. */
  readonly sequence: bigint;
}

/** An analytics pipeline (a Kafka topic, a webhook): it records every event it is sent. */
export class Analytics {
  readonly received: TrackedEvent[] = [];

  async track(event: OutboxEvent): Promise<void> {
    this.received.push({
      name: event.name,
      orderingKey: event.orderingKey,
      sequence: BigInt(event.sequence),
    });
  }

  /** Whether the events of every ordering key arrived in the order they were fired. */
  inOrderPerKey(): boolean {
    const last = new Map<string, bigint>();
    for (const e of this.received) {
      if (e.orderingKey === null) continue;
      const previous = last.get(e.orderingKey);
      if (previous !== undefined && previous >= e.sequence) return false;
      last.set(e.orderingKey, e.sequence);
    }
    return true;
  }
}

/** `123456` → `$1,234.56`. */
export function formatCents(cents: number): string {
  return `$${(cents / 100).toLocaleString('en-US', { minimumFractionDigits: 2 })}`;
}
