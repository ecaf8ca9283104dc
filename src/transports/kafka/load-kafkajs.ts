/**
 * kafkajs is an optional peer dependency: only an app that talks to Kafka installs it, and
 * `import 'outboxkit'` never loads it. `kafka()` and `kafkaWakeup()` load it here, the
 * first time they connect, and say how to install it when it is missing.
 */
import type * as KafkaJs from 'kafkajs';
import { ConfigurationError } from '../../errors/outbox-error.js';

/** The kafkajs module, as `import('kafkajs')` gives it. */
export type KafkajsModule = typeof KafkaJs;

let loaded: Promise<KafkajsModule> | undefined;

/**
 * Load kafkajs once. `who` names the factory in the install hint (`kafka()`,
 * `kafkaWakeup()`); any other failure than a missing package is passed on.
 */
export function loadKafkajs(who: string): Promise<KafkajsModule> {
  loaded ??= import('kafkajs').then(
    (m) => ((m as unknown as { default?: KafkajsModule }).default ?? m) as KafkajsModule,
  );
  return loaded.catch((error: unknown) => {
    loaded = undefined;
    throw kafkajsNotInstalled(who, error);
  });
}

function kafkajsNotInstalled(who: string, error: unknown): unknown {
  const e = error as NodeJS.ErrnoException;
  if (e?.code !== 'ERR_MODULE_NOT_FOUND' || !/['"]kafkajs['"]/.test(String(e.message)))
    return error;
  return new ConfigurationError(
    `${who} needs the kafkajs package, which is not installed: run \`npm install kafkajs\``,
    { cause: error },
  );
}

/**
 * Check and normalise a `brokers` option (`'host:9092'`, `'a:9092,b:9092'` or a list), so
 * a typo fails at startup rather than at the first batch.
 * @throws ConfigurationError naming `who` when a broker is not `host:port`.
 */
export function checkBrokers(who: string, brokers: unknown): string[] {
  const list =
    typeof brokers === 'string'
      ? brokers.split(',').map((b) => b.trim())
      : Array.isArray(brokers)
        ? brokers
        : undefined;
  if (!list || list.length === 0)
    throw new ConfigurationError(
      `${who}({ brokers }) must be "host:port", a comma-separated list of them, or an array (got ${brokers === undefined ? 'nothing' : typeof brokers})`,
    );
  for (const b of list)
    if (typeof b !== 'string' || !/^[^\s:/@]+:\d{1,5}$/.test(b))
      throw new ConfigurationError(
        `${who}({ brokers }) must list brokers as "host:port" (got ${JSON.stringify(b)})`,
      );
  return list as string[];
}

/**
 * A Kafka topic name: 1 to 249 characters of `[a-zA-Z0-9._-]`, and not `.` or `..` (what
 * the broker accepts). Checked before sending, so a bad name fails its item alone.
 */
export function isKafkaTopic(name: unknown): name is string {
  return (
    typeof name === 'string' &&
    /^[a-zA-Z0-9._-]{1,249}$/.test(name) &&
    name !== '.' &&
    name !== '..'
  );
}
