import { createServiceApp } from '@flagsync/flag-service'
import { documentedRoutes, mountedRoutes } from '@flagsync/test-support/express-routes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Harness, startHarness } from './harness.js'

/**
 * The README's route tables and the app are held together: every route mounted on the
 * service's Express app has a row, and every row is a mounted route.
 */
describe('the flag service README documents every route', () => {
  let h: Harness
  beforeAll(async () => {
    h = await startHarness('sqlite')
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('every mounted route is in a README route table, and every table row is mounted', () => {
    const mounted = mountedRoutes(createServiceApp(h.server.runtime))
    const documented = documentedRoutes(new URL('../README.md', import.meta.url))
    // The dashboard row (`GET /` and any HTML path) is static-file middleware with DASHBOARD_DIR, not a route.
    documented.delete('GET /')
    // Sanity: the walk sees the routers mounted inside routers (environments inside projects) and the features.
    expect(mounted).toContain('POST /api/projects/:param/environments/:param/require-approval')
    expect(mounted).toContain('GET /stream')
    expect(mounted.size).toBeGreaterThan(45)
    expect([...mounted].filter((r) => !documented.has(r)).sort(), 'mounted but not in the README').toEqual([])
    expect([...documented].filter((r) => !mounted.has(r)).sort(), 'in the README but not mounted').toEqual([])
  })
})
