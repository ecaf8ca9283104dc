export type { TaskBackend, TaskHandOff } from './task-backend.js';
