import type { LogStream } from '../../src/index.js';

/** A stream that keeps what was written, line by line. */
export function memoryStream(isTTY = false): LogStream & { readonly lines: () => string[] } {
  let text = '';
  return {
    isTTY,
    write(chunk: string) {
      text += chunk;
      return true;
    },
    lines: () => text.split('\n').slice(0, -1),
  };
}

/** A fixed moment for time stamps. */
export const AT = new Date('2031-03-01T12:00:00.000Z');
export const fixedClock = () => AT;

/** An error with a short, fixed stack, so a snapshot does not depend on the machine. */
export function errorWithStack<E extends Error>(error: E, frames = ['at handler (app.ts:1:1)']): E {
  error.stack = [`${error.name}: ${error.message}`, ...frames.map((f) => `    ${f}`)].join('\n');
  return error;
}

/** What a connection refused by PostgreSQL looks like: Sequelize's error over node's. */
export function refused(): Error {
  const parent = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), {
    code: 'ECONNREFUSED',
  });
  const error = new Error(parent.message);
  error.name = 'SequelizeConnectionRefusedError';
  return errorWithStack(Object.assign(error, { parent, original: parent }));
}

/** A logger that keeps what it was told (the relay tests' own). */
export { captureLogger } from '../relay/support.js';
