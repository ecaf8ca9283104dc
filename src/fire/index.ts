export { resolveTransaction, rootOf } from '../transaction/join.js';
export { type CommitStage, whenCommitted } from '../transaction/when-committed.js';
export { arrangeAfterCommit } from './after-commit.js';
export { type FiredEvent, type FireMessage, type FireOptions, fireEvents } from './fire.js';
export { runInlineReceivers } from './inline.js';
export { type PlanContext, planDeliveries } from './plan.js';
export { prepareEvents } from './prepare.js';
export type { PlannedEvent, PreparedEvent } from './types.js';
export { writeEvents } from './write.js';
