import { createRequire } from 'node:module';
import { Sequelize } from 'sequelize';
import { expect, it } from 'vitest';

/**
 * Which Sequelize the suite runs on: the latest 6.x, or with `OUTBOX_TEST_SEQUELIZE=oldest`
 * the oldest of the peer range (vitest.config.ts aliases `sequelize` to `sequelize-oldest`).
 * This file pins that the alias really swaps the package the runtime loads, so the CI run at
 * the range's low end is not silently the latest twice.
 */
it('runs on the Sequelize the run asked for (the peer range’s low end with OUTBOX_TEST_SEQUELIZE=oldest)', () => {
  const require = createRequire(import.meta.url);
  const pkg = (name: string) => require(`${name}/package.json`) as { version: string };
  const expected =
    process.env.OUTBOX_TEST_SEQUELIZE === 'oldest'
      ? pkg('sequelize-oldest').version
      : pkg('sequelize').version;
  expect(versionOf(Sequelize)).toBe(expected);
  const declared = (require('../../package.json') as { peerDependencies: Record<string, string> })
    .peerDependencies.sequelize;
  expect(declared).toBe(`^${pkg('sequelize-oldest').version.replace(/\.\d+$/, '.0')}`);
});

/** The version of a loaded Sequelize class (6.x sets `Sequelize.version` from its package). */
function versionOf(S: typeof Sequelize): string {
  return (S as unknown as { version: string }).version;
}
