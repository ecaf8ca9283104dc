/**
 * The event columns' half of `outbox.migrate()` and of `outbox migrate --check`: after the
 * library's own migrations, read the events table and add what the declaration lacks there
 * (see plan.ts). An outbox that declares no column asks nothing.
 */
import type { Runtime } from '../runtime.js';
import {
  describePending,
  type EventColumnPlan,
  isPending,
  planEventColumns,
  refuseMismatched,
} from './plan.js';

/** The plan for this outbox's table: what `migrate` would change. */
export async function eventColumnPlan(rt: Runtime): Promise<EventColumnPlan> {
  const empty: EventColumnPlan = { add: [], index: [], undeclared: [], mismatched: [] };
  if (rt.config.eventColumns.length === 0) return empty;
  return planEventColumns(
    rt.config.eventColumns,
    await rt.store.describeEventsTable(),
    rt.dialect.sql.ddl.eventColumns,
    rt.tables,
  );
}

/**
 * Add the declared columns and indexes the events table lacks. A column it has that the
 * config does not declare is kept and logged (a warning: its values stay, nothing writes
 * it); a declared column of another type is refused before anything is changed.
 *
 * @returns the plan it carried out.
 * @throws {ConfigurationError} for a column whose type differs from its declaration.
 */
export async function migrateEventColumns(rt: Runtime): Promise<EventColumnPlan> {
  const plan = await eventColumnPlan(rt);
  refuseMismatched(plan, 'migrate()', rt.tables.events);
  if (plan.undeclared.length > 0) {
    rt.logger.warn(
      `migrate(): ${rt.tables.events} has columns eventColumns does not declare (${plan.undeclared.join(', ')}); kept as they are, never dropped: drop them with a migration of your own if they are no longer wanted`,
    );
  }
  if (isPending(plan)) {
    // Two migrators at once: the other may add a column or an index first (a duplicate),
    // and MariaDB commits each DDL statement by itself. Read the table again and add what
    // is still missing; a third failure is a real one.
    let pending = plan;
    for (let tries = 1; isPending(pending); tries++) {
      try {
        await rt.store.addEventColumns(pending.add, pending.index);
        break;
      } catch (error) {
        pending = await eventColumnPlan(rt);
        if (tries >= 3 && isPending(pending)) throw error;
      }
    }
    rt.logger.info(`migrate(): event columns of ${rt.tables.events}: ${describePending(plan)}`);
  }
  return plan;
}
