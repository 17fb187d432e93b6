import { afterEach } from 'vitest'
import type { Dialect } from './databases.js'
import { openSse } from './sse-reader.js'
import { startTestServer, type TestServer } from './test-server.js'

type Reader = Awaited<ReturnType<typeof openSse>>

/**
 * Flat API servers on `dialect` and SSE readers of them for one describe block, all closed after each test.
 * `defaults` go under every `start`'s overrides.
 */
export function streamServers(dialect: Dialect, defaults: Parameters<typeof startTestServer>[0] = {}) {
  const servers: TestServer[] = []
  const readers: Reader[] = []
  afterEach(async () => {
    for (const r of readers.splice(0)) r.close()
    for (const s of servers.splice(0)) await s.dispose()
  })
  return {
    /** Closed after the test as well. */
    readers,
    async start(overrides: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
      const server = await startTestServer({ dialect, ...defaults, ...overrides })
      servers.push(server)
      return server
    },
    /** GET /stream with `headers`, closed after the test. */
    async subscribe(server: TestServer, headers: Record<string, string> = {}): Promise<Reader> {
      const reader = await openSse(`${server.url}/stream`, headers)
      readers.push(reader)
      return reader
    },
  }
}
