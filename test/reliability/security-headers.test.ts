import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadReceiverConfig, startReceiverServer } from '@flagsync/receiver'
import { createTestDatabase } from '@flagsync/test-support/databases'
import { tempDir } from '@flagsync/test-support/temp-dir'
import { describe, expect, it } from 'vitest'
import { createProject } from '../../packages/flag-service/test/flags/support.js'
import { startHarness } from '../../packages/flag-service/test/harness.js'
import { serversPerTest } from './harness.js'

// SECURITY.md, line 6: every answer of the three servers carries the API set, and a page or a page's file helmet's
// full set for pages instead.

const { start, cleanups } = serversPerTest()

const KEY = 'sk_live_9f8e7d6c5b4a39281706f5e4d3c2b1a0'

/** A built page's folder: index.html, a hashed asset and a service worker. */
function pageFolder(prefix: string): string {
  const dir = tempDir(prefix)
  cleanups.push(() => dir.remove())
  mkdirSync(join(dir.path, 'assets'))
  writeFileSync(join(dir.path, 'index.html'), '<!doctype html><title>page</title>')
  writeFileSync(join(dir.path, 'assets', 'app-3f9a2c1b.js'), 'export {}')
  writeFileSync(join(dir.path, 'sw.js'), 'self.addEventListener("fetch", () => {})')
  return dir.path
}

/**
 * The API's set (`API_SECURITY_HEADERS` in server-kit), written out here rather than imported, so that a header
 * dropped from or weakened in the source fails.
 */
const API_HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'cross-origin-resource-policy': 'same-site',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
}
/** Helmet's headers that mean something only for a page a browser renders. */
const PAGE_ONLY = [
  'cross-origin-opener-policy',
  'origin-agent-cluster',
  'x-dns-prefetch-control',
  'x-download-options',
  'x-frame-options',
  'x-permitted-cross-domain-policies',
  'x-xss-protection',
]

function expectApiHeaders(name: string, res: Response) {
  for (const [header, value] of Object.entries(API_HEADERS))
    expect(res.headers.get(header), `${name}: ${header}`).toBe(value)
  for (const header of PAGE_ONLY) expect(res.headers.get(header), `${name}: ${header}`).toBeNull()
  expect(res.headers.get('x-powered-by'), name).toBeNull()
}

/** Helmet's set for pages, with the CSP of `pageSecurityHeaders()`. */
function expectPageHeaders(name: string, res: Response) {
  const h = res.headers
  const csp = h.get('content-security-policy') ?? ''
  for (const directive of ["default-src 'self'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"])
    expect(csp, name).toContain(directive)
  // A page served over http from a host other than localhost must load its own scripts over http.
  expect(csp, name).not.toContain('upgrade-insecure-requests')
  expect(h.get('x-content-type-options'), name).toBe('nosniff')
  expect(h.get('x-frame-options'), name).toBe('SAMEORIGIN')
  expect(h.get('referrer-policy'), name).toBe('no-referrer')
  expect(h.get('cross-origin-resource-policy'), name).toBe('same-site')
  expect(h.get('cross-origin-opener-policy'), name).toBe('same-origin')
  expect(h.get('strict-transport-security'), name).toBe(API_HEADERS['strict-transport-security'])
  expect(h.get('x-powered-by'), name).toBeNull()
}

describe('security headers of the flat API', () => {
  it('every API answer carries the API set: both read paths, 304s, errors, OFREP, the stream, health, the receiver', async () => {
    const server = await start({ config: { sdkKey: KEY } })
    const auth = { Authorization: `Bearer ${KEY}` }
    // An Origin header sends a read through Express (CORS) instead of the node:http fast path.
    const viaExpress = { ...auth, Origin: 'http://127.0.0.1' }
    expect((await server.request('/api/flags', { method: 'POST', body: { key: 'f', is_enabled: true } })).status).toBe(
      200,
    )
    const listed = await fetch(`${server.url}/api/flags`, { headers: auth })
    const etag = listed.headers.get('etag') as string
    const ofrep = (headers: Record<string, string>, body = '{"context":{"targetingKey":"u-1"}}') =>
      fetch(`${server.url}/ofrep/v1/evaluate/flags`, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json' },
        body,
      })
    const bulk = await ofrep(auth)
    const responses: Array<[string, Response]> = [
      ['GET /api/flags', listed],
      ['GET /api/flags via Express', await fetch(`${server.url}/api/flags`, { headers: viaExpress })],
      ['GET /api/flags/f', await fetch(`${server.url}/api/flags/f`, { headers: auth })],
      ['GET /api/flags/f via Express', await fetch(`${server.url}/api/flags/f`, { headers: viaExpress })],
      ['304', await fetch(`${server.url}/api/flags`, { headers: { ...auth, 'If-None-Match': etag } })],
      ['401', await fetch(`${server.url}/api/flags`)],
      ['404', await fetch(`${server.url}/nope`, { headers: auth })],
      ['422', await server.request('/api/flags', { method: 'POST', body: { key: 1 } })],
      ['413', await server.request('/api/flags', { method: 'POST', body: { d: 'x'.repeat(1_100_000) } })],
      ['health', await fetch(`${server.url}/health`)],
      ['POST /sync', await server.request('/sync', { method: 'POST', body: { batchId: 'h', operations: [] } })],
      ['OFREP bulk', bulk],
      ['OFREP bulk via Express', await ofrep(viaExpress)],
      ['OFREP bulk 304', await ofrep({ ...auth, 'If-None-Match': bulk.headers.get('etag') as string })],
      ['OFREP 400', await ofrep(auth, '{"context":[]}')],
    ]
    const controller = new AbortController()
    const stream = await fetch(`${server.url}/stream`, { headers: auth, signal: controller.signal })
    const resumed = await fetch(`${server.url}/stream`, {
      headers: { ...auth, 'Last-Event-ID': '1' },
      signal: controller.signal,
    })
    responses.push(['stream', stream], ['stream via Express (resume)', resumed])
    try {
      expect(responses.map(([name, res]) => [name, res.status])).toEqual([
        ['GET /api/flags', 200],
        ['GET /api/flags via Express', 200],
        ['GET /api/flags/f', 200],
        ['GET /api/flags/f via Express', 200],
        ['304', 304],
        ['401', 401],
        ['404', 404],
        ['422', 422],
        ['413', 413],
        ['health', 200],
        ['POST /sync', 200],
        ['OFREP bulk', 200],
        ['OFREP bulk via Express', 200],
        ['OFREP bulk 304', 304],
        ['OFREP 400', 400],
        ['stream', 200],
        ['stream via Express (resume)', 200],
      ])
      for (const [name, res] of responses) expectApiHeaders(name, res)
      expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/)
      expect(stream.headers.get('x-accel-buffering')).toBe('no')
    } finally {
      controller.abort()
    }
  })

  it("a console page and its files carry helmet's set for pages; a path no file answers keeps the API set", async () => {
    const server = await start({ config: { sdkKey: KEY, staticDir: pageFolder('flagsync-security-console-') } })
    const pages: Array<[string, Response]> = []
    for (const path of ['/', '/index.html', '/assets/app-3f9a2c1b.js'])
      pages.push([path, await fetch(`${server.url}${path}`)])
    expect(pages.map(([name, res]) => [name, res.status])).toEqual([
      ['/', 200],
      ['/index.html', 200],
      ['/assets/app-3f9a2c1b.js', 200],
    ])
    for (const [name, res] of pages) expectPageHeaders(name, res)
    const missing = await fetch(`${server.url}/assets/missing-1234.js`)
    expect(missing.status).toBe(404)
    expectApiHeaders('missing file', missing)
    expectApiHeaders(
      'GET /api/flags',
      await fetch(`${server.url}/api/flags`, { headers: { Authorization: `Bearer ${KEY}` } }),
    )
  })
})

const HTML = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'

describe('security headers of the flag service', () => {
  it("every API answer carries the API set; the dashboard's pages and files helmet's", async () => {
    const h = await startHarness('sqlite', { env: { DASHBOARD_DIR: pageFolder('flagsync-security-dashboard-') } })
    cleanups.push(() => h.stop())
    const project = await createProject(h)
    const sdk = { Authorization: `Bearer ${project.sdkKey}` }
    const apiAnswers: Array<[string, Response, number]> = [
      ['health', await h.request('/health'), 200],
      ['workspace', await h.request('/api/auth/workspace'), 200],
      ['401', await h.request('/api/projects'), 401],
      ['404', await h.request('/api/nope', { headers: { Accept: HTML } }), 404],
      ['a missing file', await h.request('/assets/missing-1234.js'), 404],
      ['405', await h.request('/health', { method: 'DELETE' }), 405],
      ['flags', await h.request(`/api/environments/${project.production}/flags`, { headers: sdk }), 200],
      [
        'OFREP bulk',
        await h.request('/ofrep/v1/evaluate/flags', {
          method: 'POST',
          headers: { ...sdk, 'Content-Type': 'application/json' },
          body: '{"context":{"targetingKey":"u-1"}}',
        }),
        200,
      ],
      [
        'sync 422',
        await h.request(`/api/environments/${project.production}/sync`, {
          method: 'POST',
          headers: { ...sdk, 'Content-Type': 'application/json' },
          body: '{"batchId":"b","operations":[{"action":"jump"}]}',
        }),
        422,
      ],
    ]
    const controller = new AbortController()
    cleanups.push(() => controller.abort())
    apiAnswers.push(['stream', await fetch(`${h.url}/stream`, { headers: sdk, signal: controller.signal }), 200])
    expect(apiAnswers.map(([name, res]) => [name, res.status])).toEqual(apiAnswers.map(([name, , s]) => [name, s]))
    for (const [name, res] of apiAnswers) expectApiHeaders(name, res)

    const pages: Array<[string, Response]> = [
      ['/', await h.request('/')],
      ['a client-side route', await h.request('/projects/1b9d6bcd/flags', { headers: { Accept: HTML } })],
      ['an asset', await h.request('/assets/app-3f9a2c1b.js')],
      ['the service worker', await h.request('/sw.js')],
    ]
    expect(pages.map(([name, res]) => [name, res.status])).toEqual(pages.map(([name]) => [name, 200]))
    for (const [name, res] of pages) expectPageHeaders(name, res)
  })
})

describe('security headers of the standalone receiver', () => {
  it('every answer carries the API set: applied, refused, unauthenticated, unknown paths, health', async () => {
    const db = await createTestDatabase('sqlite')
    cleanups.push(() => db.drop())
    const receiver = await startReceiverServer(
      loadReceiverConfig({ DATABASE_URL: db.url, PORT: '0', RECEIVER_TOKEN: KEY }),
    )
    cleanups.push(() => receiver.close())
    const post = (body: string, auth = true) =>
      fetch(receiver.receiverUrl, {
        method: 'POST',
        headers: { ...(auth ? { Authorization: `Bearer ${KEY}` } : {}), 'Content-Type': 'application/json' },
        body,
      })
    const answers: Array<[string, Response, number]> = [
      ['applied', await post('{"batchId":"b1","operations":[]}'), 200],
      ['422', await post('{"batchId":"b2","operations":[{"action":"jump"}]}'), 422],
      ['401', await post('{"batchId":"b3","operations":[]}', false), 401],
      ['405', await fetch(receiver.receiverUrl, { headers: { Authorization: `Bearer ${KEY}` } }), 405],
      ['404', await fetch(new URL('/nope', receiver.receiverUrl)), 404],
      ['health', await fetch(new URL('/health', receiver.receiverUrl)), 200],
    ]
    expect(answers.map(([name, res]) => [name, res.status])).toEqual(answers.map(([name, , s]) => [name, s]))
    for (const [name, res] of answers) expectApiHeaders(name, res)
  })
})
