export { inProcessWakeup } from './in-process.js';
export type { ListenNotifyOptions } from './listen-notify.js';
export { listenNotifyWakeup } from './listen-notify.js';
export type { OutboxWakeup } from './wakeup.js';
