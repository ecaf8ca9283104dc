// A vitest setup file (listed in vitest.config.ts under test.setupFiles): it runs before
// each test file, in that file's module registry, so the app's modules load after it.
import { afterAll } from 'vitest';
import { sqliteTestDatabase } from '../../../testing/index.js';

const db = await sqliteTestDatabase(); // a temp file per test file; postgresTestSchema(): a schema
process.env.DATABASE_URL = db.url; // read by the app's Sequelize, made when the test imports it
afterAll(() => db.cleanup()); // after the test file's own afterAll, and when a test failed too
