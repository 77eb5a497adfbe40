import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The threads pool crashes Temporal's native bridge; forks gives each file a process.
    pool: 'forks',
    // Two files at a time. Vitest's default is one fewer than the cores, so one on a 2-core
    // machine, and most files spend their time waiting (processes starting, deadlines, a
    // paced sandbox): two at once took CI from 46 to 30 minutes, every file passing.
    maxWorkers: 2,
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Temporal builds and dev-server boots can take minutes on a fresh machine.
    teardownTimeout: 30_000,
  },
});
