import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    globalSetup: ['test/global-setup.ts'],
    projects: [
      { extends: true, test: { name: 'outboxkit', include: ['test/**/*.test.ts'] } },
      // The shop's example test, run as the README shows it (its own setup file).
      'examples/shop/test/vitest.config.ts',
    ],
  },
});
