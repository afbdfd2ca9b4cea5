import { defineConfig } from 'vitest/config';

// Plain-data tests only (`npm run test:unit`): no engine, so no engine check before them.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/integration/**', 'node_modules/**'],
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
