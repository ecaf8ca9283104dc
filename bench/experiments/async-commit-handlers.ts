/**
 * EXPERIMENT, not outboxkit's behaviour: the relay's connections commit with
 * `synchronous_commit = off`, so a handler's transaction (its work and its acknowledgement)
 * does not wait for its WAL flush. Enabled by
 * `npm run bench -- --only drain --receivers noop-handler --experiment async-commit-handlers`.
 *
 * Why it is safe for the outbox's guarantees: the work and the acknowledgement commit or
 * vanish together, so a crash that loses the last few commits only means those deliveries
 * run again (at least once still holds, and same-database work is still done exactly once).
 * What it changes: the handler's own writes are no longer durable at the moment the relay
 * reports them delivered. That is a choice for the application, hence an opt-in at most.
 */
import type { Sequelize } from 'sequelize';

export function useAsyncCommit(sequelize: Sequelize): void {
  sequelize.addHook('afterConnect', async (connection) => {
    await (connection as { query(sql: string): Promise<unknown> }).query(
      'SET synchronous_commit = off',
    );
  });
}
