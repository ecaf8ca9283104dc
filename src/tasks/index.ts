export type { BullmqTaskBackendOptions, BullmqTaskWorkerOptions } from './bullmq.js';
export { bullmqTaskBackend, bullmqTaskWorker } from './bullmq.js';
export type { TaskWorker } from './options.js';
export type { PgBossTaskBackendOptions, PgBossTaskWorkerOptions } from './pg-boss.js';
export { pgBossTaskBackend, pgBossTaskWorker } from './pg-boss.js';
export type { TaskBackend, TaskHandOff } from './task-backend.js';
