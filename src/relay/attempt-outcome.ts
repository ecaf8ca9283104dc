import { DeliveryTimeout } from '../errors/outbox-error.js';
import { NotYet, RetryAfter } from '../errors/signals.js';
import type { DeliveryOutcome } from '../observe/around-delivery.js';
import type { AttemptResult } from './attempt-result.js';

const SUCCEEDED: DeliveryOutcome = { status: 'succeeded' };
const LOST: DeliveryOutcome = { status: 'lost' };

/**
 * What an `aroundDelivery` hook is told one row's attempt came to: read off the verdict the
 * relay records (never decided apart from it, so a hook cannot see one outcome while the row
 * gets another).
 */
export function deliveryOutcome(result: AttemptResult): DeliveryOutcome {
  switch (result.kind) {
    case 'acknowledged':
      return SUCCEEDED;
    case 'lost':
      return LOST;
    case 'handBack':
      return { status: 'handedBack', error: result.error };
    case 'outcome': {
      const { outcome, error } = result;
      if (outcome.status === 'succeeded') return SUCCEEDED;
      if (error instanceof NotYet && outcome.status === 'pending')
        return { status: 'notYet', error };
      const deadLettered = outcome.status === 'dead';
      if (error instanceof RetryAfter) return { status: 'retryAfter', error, deadLettered };
      if (error instanceof DeliveryTimeout) return { status: 'timedOut', error, deadLettered };
      return { status: 'failed', error, deadLettered };
    }
  }
}
