import { createFlatApiApp } from '@flagsync/flat-api'
import { documentedRoutes, mountedRoutes } from '@flagsync/test-support/express-routes'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

/** The flat API's README route table and its Express app hold the same routes. */
describe('the flat API README documents every route', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer()
  })
  afterAll(async () => {
    await server?.dispose()
  })

  it('every mounted route is in the README route table, and every row is mounted', () => {
    const mounted = mountedRoutes(createFlatApiApp({ runtime: server.runtime }))
    const documented = documentedRoutes(new URL('../README.md', import.meta.url))
    expect(mounted).toContain('POST /api/flags')
    expect([...mounted].filter((r) => !documented.has(r)).sort(), 'mounted but not in the README').toEqual([])
    expect([...documented].filter((r) => !mounted.has(r)).sort(), 'in the README but not mounted').toEqual([])
  })
})
