export { ConfigurationError, DeliveryError, OutboxError, ValidationError } from './outbox-error.js';
export { NotYet, PermanentFailure, RetryAfter } from './signals.js';
