import { fileURLToPath } from 'node:url'
import { defaultServerConditions } from 'vite'
import { defineConfig } from 'vitest/config'

// Browser end-to-end tests: the real server as a process, the built console, Debian's Chromium.
// `npm run test:e2e`; also the examples' own unit tests. Like the root config, workspace packages resolve to their sources.
const conditions = ['flagsync-source', ...defaultServerConditions]

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ['test/e2e/**/*.e2e.ts', 'examples/*/test/**/*.test.ts'],
    globalSetup: ['test/e2e/global-setup.ts'],
    // One browser at a time: the steps of a file share a server and pages, and files run one after another.
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
})
