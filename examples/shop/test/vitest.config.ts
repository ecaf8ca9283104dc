import { defineProject } from 'vitest/config';

/**
 * The shop's tests, set up the way the README's testing section says: `setup.ts` gives each
 * test file a database of its own and points the app's `DATABASE_URL` at it.
 */
export default defineProject({
  root: import.meta.dirname,
  test: {
    name: 'shop-example',
    include: ['*.test.ts'],
    setupFiles: ['setup.ts'],
  },
});
