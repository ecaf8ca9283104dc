import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mariadbTestDatabase, type TestDatabase } from '../../testing/databases.js';
import { type Packed, packedTarball } from './support/build.js';
import { REPO, run } from './support/tarball.js';

/**
 * SLOW (~1-2 min): the "done means" for MariaDB, as an app gets the package. The
 * packed tarball installed in a fresh app with sequelize, zod, mariadb and mysql2 (npm's
 * cache serves them), then, per driver, against a MariaDB database of its own: migrate,
 * a fire in a rolled-back transaction (nothing), 4 relays on 4 Sequelize instances over
 * 5,000 events on 200 ordering keys (no loss, no duplicate, no inversion within a key),
 * change capture of a model's create / update / destroy (test/packaging/consumer/
 * mariadb-scenario.mjs), and `npx outbox health` on the database.
 */
const installed = (name: string): string =>
  (
    JSON.parse(readFileSync(join(REPO, 'node_modules', name, 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;

describe.skipIf(!inject('mariadbAvailable'))(
  '[slow] the packed tarball on MariaDB, through the mariadb and the mysql2 driver [mariadb]',
  () => {
    let work: string;
    let packed: Packed;
    let app: string;

    beforeAll(() => {
      work = mkdtempSync(join(tmpdir(), 'outboxkit-mariadb-'));
      packed = packedTarball();
      app = join(work, 'app');
      mkdirSync(app, { recursive: true });
      writeFileSync(
        join(app, 'package.json'),
        `${JSON.stringify({ name: 'consumer', version: '0.0.0', private: true, type: 'module' })}\n`,
      );
      run(
        'npm',
        [
          'install',
          '--no-audit',
          '--no-fund',
          '--prefer-offline',
          '--ignore-scripts',
          '--no-package-lock',
          packed.tarball,
          `sequelize@${installed('sequelize')}`,
          `zod@${installed('zod')}`,
          `mariadb@${installed('mariadb')}`,
          `mysql2@${installed('mysql2')}`,
        ],
        app,
      );
      copyFileSync(
        join(REPO, 'test/packaging/consumer/mariadb-scenario.mjs'),
        join(app, 'scenario.mjs'),
      );
      writeFileSync(
        join(app, 'outbox.config.mjs'),
        [
          "import { z } from 'zod';",
          "import { defineOutbox, event, receiver } from 'outboxkit';",
          'const Ping = event({ schema: z.object({ k: z.string(), n: z.number() }) });',
          'export default defineOutbox({',
          "  events: { 'app.Ping': Ping },",
          "  receivers: { 'app.count': receiver(Ping, { handle: async () => {} }) },",
          '});',
          '',
        ].join('\n'),
      );
    }, 300_000);

    afterAll(() => {
      if (work) rmSync(work, { recursive: true, force: true });
    });

    for (const driver of ['mariadb', 'mysql'] as const) {
      it(`${driver}: migrate, a rolled-back fire, 4 relays over 5,000 events on 200 keys, capture, health`, async () => {
        const db: TestDatabase = await mariadbTestDatabase(driver);
        try {
          const scenario = spawnSync(process.execPath, ['scenario.mjs'], {
            cwd: app,
            encoding: 'utf8',
            env: { ...process.env, OUTBOX_URL: db.url },
            timeout: 280_000,
          });
          expect(scenario.status, scenario.stderr).toBe(0);
          const out = JSON.parse(scenario.stdout.trim().split('\n').at(-1) ?? '{}');
          expect(out.afterRollback).toBe(0);
          expect(out.delivered).toBe(5000);
          expect(out.duplicates).toBe(0);
          expect(out.inversions).toBe(0);
          expect(out.counts).toMatchObject({ succeeded: 5000, pending: 0, claimed: 0 });
          // The queue was split, not run by one. Not every relay need take part: concurrent
          // claims read the same oldest candidates and the second to lock them comes back
          // empty (docs/databases.md, "The claim"); the drain takes 2 s, so one relay of four
          // can end with few or none (seen: 0 and 7 of 5,000).
          expect(
            out.perRelay.filter((n: number) => n > 0).length,
            JSON.stringify(out.perRelay),
          ).toBeGreaterThanOrEqual(2);
          expect(out.captured).toEqual([
            'shop.order.inserted',
            'shop.order.updated',
            'shop.order.deleted',
          ]);
          const health = spawnSync(
            join(app, 'node_modules', '.bin', 'outbox'),
            ['health', '--config', 'outbox.config.mjs', '--url', db.url],
            { cwd: app, encoding: 'utf8', env: { ...process.env, DATABASE_URL: '' } },
          );
          expect(health.status, `${health.stdout}\n${health.stderr}`).toBe(0);
          expect(health.stdout).toMatch(/owed 0\b/);
          console.log(
            `${driver}: ${JSON.stringify({ fireMs: out.fireMs, relayMs: out.relayMs, perRelay: out.perRelay })}`,
          );
        } finally {
          await db.cleanup();
        }
      }, 300_000);
    }
  },
);
