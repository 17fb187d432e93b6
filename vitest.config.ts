import { defaultServerConditions } from 'vite'
import { defineConfig } from 'vitest/config'

// Workspace packages export their TypeScript sources under the `flagsync-source`
// condition, so tests run against src/ without a build step in between.
const conditions = ['flagsync-source', ...defaultServerConditions]

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ['packages/*/test/**/*.test.{ts,tsx}', 'examples/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    exclude: ['**/node_modules/**', 'test/e2e/**'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    restoreMocks: true,
  },
})
