import type { Sequelize, Transaction } from 'sequelize';
import { ValidationError } from '../errors/outbox-error.js';

/**
 * The transaction `fire()` writes in: the one passed explicitly, else the one Sequelize's
 * CLS namespace carries (when the application enabled `Sequelize.useCLS`), else none — and
 * `fire()` then commits at once in a transaction of its own.
 *
 * @throws {ValidationError} for a transaction of another Sequelize instance: the event
 * would commit on a different connection than the change it reports.
 */
export function resolveTransaction(
  sequelize: Sequelize,
  explicit: Transaction | null | undefined,
): Transaction | undefined {
  if (explicit) {
    const owner = (explicit as unknown as { sequelize?: unknown }).sequelize;
    if (owner !== sequelize) {
      throw new ValidationError(
        "options.transaction belongs to another Sequelize instance than the outbox was created with; the event would not commit with your change. Pass a transaction of the outbox's Sequelize, or create the outbox with that instance.",
        { path: 'options.transaction' },
      );
    }
    const finished = (explicit as unknown as { finished?: string }).finished;
    if (finished) {
      throw new ValidationError(
        `options.transaction has already ended (${finished}); fire inside a live transaction`,
        {
          path: 'options.transaction',
        },
      );
    }
    return explicit;
  }
  const cls = (sequelize.constructor as unknown as { _cls?: { get(key: string): unknown } })._cls;
  const ambient = cls?.get('transaction') as Transaction | undefined;
  return ambient && !(ambient as unknown as { finished?: string }).finished ? ambient : undefined;
}
