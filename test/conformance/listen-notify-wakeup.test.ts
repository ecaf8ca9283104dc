import pg from 'pg';
import { describe, inject } from 'vitest';
import { silentLogger } from '../../src/observe/logger.js';
import { listenNotifyWakeup } from '../../src/wakeups/listen-notify.js';
import { type WakeupFactory, wakeupConformance } from '../../testing/conformance/index.js';
import { postgresUrl } from '../../testing/databases.js';
import { wakeupConnectionOf } from '../wakeups/support.js';

/**
 * A listen-notify wakeup on a channel of its own; `send` stands in for fire()'s write,
 * which notifies each distinct topic in one statement on another connection.
 */
function listenNotifyFactory(how: 'context' | 'options'): WakeupFactory {
  return async ({ runId }) => {
    const channel = `obk_${runId}`;
    const wakeup = listenNotifyWakeup({
      channel,
      logger: silentLogger,
      ...(how === 'options' ? { connection: { connectionString: postgresUrl() } } : {}),
    });
    const notifier = new pg.Client({ connectionString: postgresUrl() });
    await notifier.connect();
    return {
      wakeup,
      // Given its own connection, the wakeup must not need the outbox's: point it nowhere.
      context: {
        connection:
          how === 'context'
            ? wakeupConnectionOf(postgresUrl())
            : { dialect: 'postgres', host: '127.0.0.1', port: 1 },
      },
      async send(topics) {
        await notifier.query('SELECT pg_notify($1, t) FROM unnest($2::text[]) t', [
          channel,
          [...topics],
        ]);
      },
      cleanup: () => notifier.end(),
    };
  };
}

describe.skipIf(!inject('pgAvailable'))('[postgres]', () => {
  wakeupConformance(
    'listenNotifyWakeup, connecting as the outbox database',
    listenNotifyFactory('context'),
  );
  wakeupConformance(
    'listenNotifyWakeup, with a connection of its own',
    listenNotifyFactory('options'),
  );
});
