import { createServiceApp } from '@flagsync/flag-service'
import { mountedRoutes } from '@flagsync/test-support/express-routes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createProject, type Project } from './flags/support.js'
import { type Harness, startHarness } from './harness.js'

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const

/**
 * Every path the service answers gives 405 with `Allow` (the methods it does
 * answer) for any other method, never a 404 that reads as "no such path"
 * (`POST /health` is a 405 like `POST /stream`).
 * Walks the mounted routes, so a new path is covered without a new case.
 */
describe('a wrong method at a known path', () => {
  let h: Harness
  let p: Project
  let userId: number
  beforeAll(async () => {
    h = await startHarness('sqlite')
    p = await createProject(h)
    userId = await h.createUser({ email: 'm@example.com', role: 'editor' })
  })
  afterAll(async () => {
    await h?.dispose()
  })

  /** A real id for each `:param`, chosen by the segment before it. */
  const fill = (path: string) => {
    const ids: Record<string, string> = {
      projects: p.id,
      environments: p.staging,
      users: String(userId),
      members: String(userId),
      tokens: '1',
      keys: '1',
      flags: 'f0',
      segments: 's0',
      'change-requests': '1',
    }
    const segments = path.split('/')
    return segments.map((s, i) => (s === ':param' ? (ids[segments[i - 1] ?? ''] ?? 'x') : s)).join('/')
  }

  it('answers 405 with exactly the methods of the path in Allow', async () => {
    const byPath = new Map<string, Set<string>>()
    for (const route of mountedRoutes(createServiceApp(h.server.runtime))) {
      const [method, path] = route.split(' ') as [string, string]
      byPath.set(path, (byPath.get(path) ?? new Set()).add(method))
    }
    expect(byPath.get('/health')).toEqual(new Set(['GET']))
    const wrong: string[] = []
    for (const [path, allowed] of byPath) {
      for (const method of METHODS.filter((m) => !allowed.has(m))) {
        const res = await h.call(fill(path), { method, as: h.admin, body: method === 'GET' ? undefined : {} })
        const allow = new Set(
          (res.res.headers.get('allow') ?? '')
            .split(',')
            .map((m) => m.trim())
            .filter(Boolean),
        )
        const ok = res.status === 405 && res.body?.code === 'method_not_allowed'
        if (!ok || [...allowed].some((m) => !allow.has(m)) || allow.size !== allowed.size) {
          wrong.push(`${method} ${path}: ${res.status} Allow: ${res.res.headers.get('allow')} (want ${[...allowed]})`)
        }
      }
    }
    expect(wrong).toEqual([])
  })
})
