/** Where outboxkit writes what it has to say. Plug in pino, winston or your own. */
export interface OutboxLogger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** The default logger: warnings and errors to the console, the rest dropped. */
export const consoleLogger: OutboxLogger = {
  debug() {},
  info() {},
  warn(message, fields) {
    console.warn(`[outboxkit] ${message}`, fields ?? '');
  },
  error(message, fields) {
    console.error(`[outboxkit] ${message}`, fields ?? '');
  },
};

/** A logger that drops everything, for tests and benchmarks. */
export const silentLogger: OutboxLogger = { debug() {}, info() {}, warn() {}, error() {} };
