export type { OutboxErrorCode } from './outbox-error.js';
export {
  ConfigurationError,
  DeliveryError,
  DeliveryTimeout,
  OutboxError,
  PayloadDecodeError,
  PayloadUpgradeFailed,
  ValidationError,
} from './outbox-error.js';
export { NotYet, PermanentFailure, RetryAfter, type RetryAfterOptions } from './signals.js';
