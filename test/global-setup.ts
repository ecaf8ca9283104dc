import type { TestProject } from 'vitest/node';
import {
  mariadbAvailable,
  mariadbUrl,
  postgresAvailable,
  postgresUrl,
} from '../testing/databases.js';
import { kafkaForTests } from './kafka-mock.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAvailable: boolean;
    /** Whether the MariaDB server answers (the [mariadb] and [mysql] suites run on it). */
    mariadbAvailable: boolean;
    /** The Kafka brokers (`host:port,…`) the Kafka suites use, or `null`: they are skipped. */
    kafkaBrokers: string | null;
  }
}

/**
 * Check once whether the PostgreSQL server answers. Without it every SQLite suite still
 * runs and the PostgreSQL suites are skipped — loudly. CI sets OUTBOX_REQUIRE_SERVERS=1,
 * which turns a missing server into a failure, so CI always runs the PostgreSQL suites.
 */
export default async function setup(project: TestProject) {
  const stopKafka = await setupKafka(project);
  const stopPostgres = await setupPostgres(project);
  const stopMariadb = await setupMariadb(project);
  return () => {
    stopPostgres?.();
    stopMariadb?.();
    stopKafka();
  };
}

/**
 * Kafka for the Kafka suites: `OUTBOX_TEST_KAFKA_BROKERS`, else the kcat mock cluster
 * started here (and stopped at teardown). Without either the suites are skipped, loudly,
 * unless OUTBOX_REQUIRE_SERVERS=1, which fails instead.
 */
async function setupKafka(project: TestProject): Promise<() => void> {
  const kafka = await kafkaForTests();
  if (!kafka.brokers) {
    const banner = `Kafka is not available (${kafka.reason}): every Kafka suite is SKIPPED`;
    if (process.env.OUTBOX_REQUIRE_SERVERS === '1')
      throw new Error(`${banner}, and OUTBOX_REQUIRE_SERVERS=1 forbids skipping (see .ci/run).`);
    console.warn(`\n${'!'.repeat(80)}\n!! ${banner}\n${'!'.repeat(80)}\n`);
  }
  project.provide('kafkaBrokers', kafka.brokers ?? null);
  return kafka.stop;
}

async function setupPostgres(project: TestProject) {
  const available = await postgresAvailable();
  if (!available) {
    const banner = `PostgreSQL at ${postgresUrl()} did not answer: every PostgreSQL suite is SKIPPED`;
    if (process.env.OUTBOX_REQUIRE_SERVERS === '1') {
      throw new Error(
        `${banner}, and OUTBOX_REQUIRE_SERVERS=1 forbids skipping. Start PostgreSQL (see .ci/run).`,
      );
    }
    const loud = `\n${'!'.repeat(80)}\n!! ${banner}\n!! (the suites marked [postgres]; set OUTBOX_TEST_PG_URL or start PostgreSQL to run them)\n${'!'.repeat(80)}\n`;
    console.warn(loud);
    project.provide('pgAvailable', false);
    return () => console.warn(loud); // and again after the results, where it is read
  }
  project.provide('pgAvailable', true);
  return undefined;
}

async function setupMariadb(project: TestProject) {
  const available = await mariadbAvailable();
  project.provide('mariadbAvailable', available);
  if (available) return undefined;
  const banner = `MariaDB at ${mariadbUrl()} did not answer: every MariaDB and MySQL suite is SKIPPED`;
  if (process.env.OUTBOX_REQUIRE_SERVERS === '1') {
    throw new Error(
      `${banner}, and OUTBOX_REQUIRE_SERVERS=1 forbids skipping. Start MariaDB (see .ci/run).`,
    );
  }
  const loud = `\n${'!'.repeat(80)}\n!! ${banner}\n!! (the suites marked [mariadb] and [mysql]; set OUTBOX_TEST_MARIADB_URL or start MariaDB to run them)\n${'!'.repeat(80)}\n`;
  console.warn(loud);
  return () => console.warn(loud);
}
