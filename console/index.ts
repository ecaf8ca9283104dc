/**
 * `outboxkit/console`: the operations console — health, dead letters, events, quiet
 * receivers and the catalogue in the browser, with requeue, replay and cancel behind a
 * token, a CSRF token and a confirmation. Mount {@link createConsoleHandler} in your own
 * server, or run `npx outbox console`. See docs/console.md.
 */
export type { ConsoleAuditEntry, ConsoleAuditHook } from './actions.js';
export {
  type ConsoleGrant,
  type ConsoleHandler,
  type ConsoleOptions,
  createConsoleHandler,
} from './handler.js';
