import { createFlatApiApp } from '@flagsync/flat-api'
import { DIALECTS } from '@flagsync/test-support/databases'
import { mountedRoutes } from '@flagsync/test-support/express-routes'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

/**
 * Every mounted route of the flat API × every kind of credential, with the
 * status class each must get: 401, 403 or "admitted" (anything else below
 * 500). The flat API has no users: a personal access token or a session
 * cookie is no credential of its own, so it is a 401. A route added without
 * a row here fails the first test.
 */

const SDK_KEY = 'sk_flat_server_0123456789'
const CLIENT_KEY = 'pk_flat_client_0123456789'

type Credential = 'none' | 'wrong' | 'client key' | 'server key' | 'PAT' | 'session cookie'
type StatusClass = 401 | 403 | 'admitted'

const HEADERS: Record<Credential, Record<string, string>> = {
  none: {},
  wrong: { Authorization: 'Bearer sk_wrong' },
  'client key': { Authorization: `Bearer ${CLIENT_KEY}` },
  'server key': { Authorization: `Bearer ${SDK_KEY}` },
  PAT: { Authorization: `Bearer pat_${'x'.repeat(43)}` },
  'session cookie': { Cookie: 'flagsync_session=abc', 'X-Service-Request': 'true' },
}

interface RouteRow {
  path: string
  body?: unknown
  /** Public routes need no credential. */
  public?: boolean
  /** Whether the client key is admitted (reads, /stream, OFREP); otherwise 403. */
  client?: boolean
}

const flag = { key: 'f0', is_enabled: true }
const ROUTES: Record<string, RouteRow> = {
  'GET /health': { path: '/health', public: true },
  'GET /api/flags': { path: '/api/flags', client: true },
  'GET /api/flags/:param': { path: '/api/flags/f0', client: true },
  'POST /api/flags': { path: '/api/flags', body: flag },
  'PATCH /api/flags/:param': { path: '/api/flags/f0', body: { description: 'x' } },
  'DELETE /api/flags/:param': { path: '/api/flags/missing' },
  'GET /stream': { path: '/stream', client: true },
  'GET /api/flags/:param/history': { path: '/api/flags/f0/history' },
  'GET /api/changes': { path: '/api/changes' },
  'POST /sync': {
    path: '/sync',
    body: { batchId: 'b1', operations: [{ action: 'update', collection: 'flags', recordId: 'f0', changes: {} }] },
  },
}

const OFREP_ROUTE = /^(GET|POST) \/ofrep\/v1\//
const rowOf = (route: string): RouteRow | undefined => {
  if (ROUTES[route]) return ROUTES[route]
  if (!OFREP_ROUTE.test(route)) return undefined
  const post = route.startsWith('POST')
  const path = route.slice(route.indexOf(' ') + 1).replace(/:param/g, 'f0')
  return { path, client: true, ...(post ? { body: { context: { targetingKey: 'u1' } } } : {}) }
}

function expectedFor(row: RouteRow, credential: Credential): StatusClass {
  if (row.public) return 'admitted'
  if (credential === 'server key') return 'admitted'
  if (credential === 'client key') return row.client ? 'admitted' : 403
  return 401
}

describe.each(DIALECTS)(
  'every route × every credential of the flat API (SDK_KEY and CLIENT_KEY set) on %s',
  (dialect) => {
    let server: TestServer
    beforeAll(async () => {
      server = await startTestServer({ env: { SDK_KEY, CLIENT_KEY }, dialect })
      const put = await server.request('/api/flags', { method: 'POST', body: flag })
      expect(put.status).toBe(200)
    })
    afterAll(async () => {
      await server?.dispose()
    })

    const mounted = () => [...mountedRoutes(createFlatApiApp({ runtime: server.runtime }))].sort()

    it('every mounted route has a row in the table', () => {
      expect(
        mounted().filter((r) => !rowOf(r)),
        'mounted without an expectation',
      ).toEqual([])
      expect(
        Object.keys(ROUTES).filter((r) => !mounted().includes(r)),
        'rows for no route',
      ).toEqual([])
    })

    it('each route answers each credential as the policy says', async () => {
      const mismatches: string[] = []
      for (const route of mounted()) {
        const row = rowOf(route) as RouteRow
        for (const credential of Object.keys(HEADERS) as Credential[]) {
          const want = expectedFor(row, credential)
          const { status, text } = await send(server, route, row, HEADERS[credential])
          const got = status === 401 || status === 403 ? status : status < 500 ? 'admitted' : status
          if (got !== want) mismatches.push(`${route} as ${credential}: want ${want}, got ${status} ${text}`)
        }
      }
      expect(mismatches).toEqual([])
    })

    it('the client key reads /stream as ?sdk_key= too, and is refused by /sync as a query-less header', async () => {
      const res = await send(server, 'GET /stream', { path: `/stream?sdk_key=${CLIENT_KEY}` }, {})
      expect(res.status).toBe(200)
      const sync = await server.request('/sync', {
        method: 'POST',
        headers: { Authorization: `Bearer ${CLIENT_KEY}` },
        body: ROUTES['POST /sync']?.body,
      })
      expect(sync.status).toBe(403)
      expect(await sync.json()).toMatchObject({
        code: 'forbidden',
        key_kind: 'client',
        error: expect.stringContaining('CLIENT_KEY'),
      })
    })

    it('50 parallel writes with the client key are all 403 and change nothing', async () => {
      const before = await (await server.request('/api/changes?limit=100')).json()
      const writes: Array<[string, string, unknown]> = [
        ['POST', '/api/flags', { ...flag, key: 'evil' }],
        ['PATCH', '/api/flags/f0', { is_enabled: false }],
        ['DELETE', '/api/flags/f0', undefined],
        ['POST', '/sync', ROUTES['POST /sync']?.body],
        ['POST', '/api/flags', { ...flag, is_enabled: false }],
      ]
      const answers = await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          const [method, path, body] = writes[i % writes.length] as [string, string, unknown]
          const res = await server.request(path, { method, body, headers: { Authorization: `Bearer ${CLIENT_KEY}` } })
          return `${method} ${path} ${res.status}`
        }),
      )
      expect(answers.filter((a) => !a.endsWith(' 403'))).toEqual([])
      expect(await (await server.request('/api/changes?limit=100')).json()).toEqual(before)
      expect(await (await server.request('/api/flags/f0')).json()).toMatchObject({ is_enabled: true })
    })
  },
)

/** One request; a stream that opened is read no further. */
async function send(server: TestServer, route: string, row: RouteRow, headers: Record<string, string>) {
  const method = route.slice(0, route.indexOf(' '))
  const all = { ...headers, ...(row.body === undefined ? {} : { 'Content-Type': 'application/json' }) }
  const controller = new AbortController()
  const res = await fetch(`${server.url}${row.path}`, {
    method,
    headers: all,
    body: row.body === undefined ? undefined : JSON.stringify(row.body),
    signal: controller.signal,
  })
  const text = res.headers.get('content-type')?.startsWith('text/event-stream') ? '' : await res.text()
  controller.abort()
  return { status: res.status, text: text.slice(0, 160) }
}
