import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The threads pool crashes Temporal's native bridge; forks gives each file a process.
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Temporal builds and dev-server boots can take minutes on a fresh machine.
    teardownTimeout: 30_000,
  },
});
