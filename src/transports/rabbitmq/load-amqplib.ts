/**
 * amqplib is an optional peer dependency: only an app that talks to RabbitMQ installs it,
 * and `import 'outboxkit'` never loads it. `rabbitmq()` and `rabbitmqWakeup()` load it here,
 * the first time they connect, and say how to install it when it is missing.
 */
import type * as Amqplib from 'amqplib';
import { ConfigurationError } from '../../errors/outbox-error.js';

/** The amqplib module, as `import('amqplib')` gives it. */
export type AmqplibModule = typeof Amqplib;

let loaded: Promise<AmqplibModule> | undefined;

/**
 * Load amqplib once. `who` names the factory in the install hint
 * (`rabbitmq()`, `rabbitmqWakeup()`); any other failure than a missing package is passed on.
 */
export function loadAmqplib(who: string): Promise<AmqplibModule> {
  loaded ??= import('amqplib').then(
    (m) => ((m as unknown as { default?: AmqplibModule }).default ?? m) as AmqplibModule,
  );
  return loaded.catch((error: unknown) => {
    loaded = undefined;
    throw amqplibNotInstalled(who, error);
  });
}

function amqplibNotInstalled(who: string, error: unknown): unknown {
  const e = error as NodeJS.ErrnoException;
  if (e?.code !== 'ERR_MODULE_NOT_FOUND' || !/['"]amqplib['"]/.test(String(e.message)))
    return error;
  return new ConfigurationError(
    `${who} needs the amqplib package, which is not installed: run \`npm install amqplib\``,
    { cause: error },
  );
}

/**
 * The broker URL with its password replaced by `***`, for log lines and error messages: a
 * secret never reaches a log or a delivery's `last_error`.
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(an unparsable URL)';
  }
}

/** Check a broker URL up front, so a typo fails at startup rather than at the first batch. */
export function checkAmqpUrl(who: string, url: unknown): string {
  if (typeof url !== 'string' || !/^amqps?:\/\//.test(url))
    throw new ConfigurationError(
      `${who}({ url }) must be an amqp:// or amqps:// URL (got ${typeof url === 'string' ? JSON.stringify(redactUrl(url)) : typeof url})`,
    );
  try {
    new URL(url);
  } catch {
    throw new ConfigurationError(`${who}({ url }) is not a valid URL`);
  }
  return url;
}
