import type { DeliveryContext, OutboxEvent } from '../../src/index.js';

// Placeholder receivers; the demo fleshes these out.
type Payload = Record<string, unknown>;
export async function reserveStock(_e: OutboxEvent<Payload>, _c: DeliveryContext): Promise<void> {}
export async function logOrderPlaced(_e: OutboxEvent<Payload>): Promise<void> {}
export async function capturePayment(_e: OutboxEvent<Payload>, _c: DeliveryContext): Promise<void> {}
export async function sendOrderConfirmation(_e: OutboxEvent<Payload>, _c: DeliveryContext): Promise<void> {}
export async function releaseStock(_e: OutboxEvent<Payload>, _c: DeliveryContext): Promise<void> {}
export async function forwardToAnalytics(_e: OutboxEvent): Promise<void> {}
