import type { TestProject } from 'vitest/node';
import { postgresAvailable, postgresUrl } from '../testing/databases.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAvailable: boolean;
  }
}

/**
 * Check once whether the PostgreSQL server answers. Without it every SQLite suite still
 * runs and the PostgreSQL suites are skipped — loudly. CI sets OUTBOX_REQUIRE_SERVERS=1,
 * which turns a missing server into a failure, so CI always runs the PostgreSQL suites.
 */
export default async function setup(project: TestProject) {
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
