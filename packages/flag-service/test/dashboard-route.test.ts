import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, loadServiceConfig } from '@flagsync/flag-service'
import { DIALECTS } from '@flagsync/test-support/databases'
import { tempDir } from '@flagsync/test-support/temp-dir'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { installedDashboardDir, resolveDashboardDir } from '../src/dashboard-route.js'
import { type Harness, startHarness } from './harness.js'

const HTML = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'
const dir = tempDir('flagsync-dashboard-route-')
const dist = dir.file('dist')
mkdirSync(join(dist, 'assets'), { recursive: true })
writeFileSync(join(dist, 'index.html'), '<!doctype html><title>dashboard</title><div id="root"></div>')
writeFileSync(join(dist, 'assets', 'index-abc123.js'), 'console.log(1)')
writeFileSync(join(dist, 'sw.js'), 'self.addEventListener("fetch", () => {})')

afterAll(() => dir.remove())

describe.each(DIALECTS)('the dashboard at / on %s', (dialect) => {
  let h: Harness
  beforeAll(async () => {
    h = await startHarness(dialect, { env: { DASHBOARD_DIR: dist } })
  })
  afterAll(() => h?.stop())

  it('serves index.html at / and for client-side routes a browser navigates to', async () => {
    for (const [path, accept] of [
      ['/', '*/*'],
      ['/', HTML],
      ['/projects/1b9d6bcd/flags', HTML],
    ] as const) {
      const res = await h.request(path, { headers: { Accept: accept } })
      expect(res.status, path).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^text\/html/)
      expect(res.headers.get('cache-control')).toBe('no-cache')
      expect(await res.text()).toContain('<div id="root">')
    }
  })

  it('serves the static files, hashed assets as immutable', async () => {
    const asset = await h.request('/assets/index-abc123.js')
    expect(asset.status).toBe(200)
    expect(asset.headers.get('cache-control')).toMatch(/immutable/)
    expect(await asset.text()).toBe('console.log(1)')
    const sw = await h.request('/sw.js')
    expect(sw.status).toBe(200)
    expect(sw.headers.get('cache-control')).not.toMatch(/immutable/)
  })

  it('never shadows the API: its routes, and its JSON 404s even for a browser asking for HTML', async () => {
    expect((await h.call('/api/auth/workspace', { headers: { Accept: HTML } })).body).toEqual({
      workspace_name: 'Acme',
      is_setup_complete: true,
    })
    for (const path of ['/api/nope', '/api', '/stream/x', '/flags/nope', '/health/x']) {
      const { status, body } = await h.call(path, { headers: { Accept: HTML } })
      expect({ path, status, code: body?.code }).toEqual({ path, status: 404, code: 'not_found' })
    }
    expect((await h.call('/health', { headers: { Accept: HTML } })).body).toBe('OK')
    // The stream keeps its own answer (401 without credentials), not the page.
    expect((await h.call('/stream', { headers: { Accept: HTML } })).status).toBe(401)
  })

  it('answers API clients (no text/html) a JSON 404 for a path that does not exist; only GETs get the page, other methods on / a 405', async () => {
    const missing = await h.call('/nope', { headers: { Accept: '*/*' } })
    expect(missing).toMatchObject({ status: 404, body: { code: 'not_found', error: 'no route for GET /nope' } })
    const missingAsset = await h.call('/assets/nope.js', { headers: { Accept: '*/*' } })
    expect(missingAsset.status).toBe(404)
    // `/` is a known path: another method is a 405 with Allow, as everywhere; a client-side route is no server path.
    for (const method of ['POST', 'DELETE', 'PUT']) {
      const other = await h.call('/', { method, body: {}, headers: { Accept: HTML } })
      expect(other).toMatchObject({ status: 405, body: { code: 'method_not_allowed' } })
      expect(other.res.headers.get('allow')).toBe('GET, HEAD')
    }
    const deep = await h.call('/projects/abc', { method: 'POST', body: {}, headers: { Accept: HTML } })
    expect(deep).toMatchObject({ status: 404, body: { code: 'not_found' } })
  })
})

describe('DASHBOARD_DIR', () => {
  it('off serves no dashboard: / is the JSON 404 again', async () => {
    const h = await startHarness('sqlite', { env: { DASHBOARD_DIR: 'off' } })
    try {
      expect(await h.call('/', { headers: { Accept: HTML } })).toMatchObject({
        status: 404,
        body: { error: 'no route for GET /' },
      })
    } finally {
      await h.stop()
    }
  })

  it('unset finds the installed @flagsync/dashboard through its package.json, only when it is built', () => {
    const pkg = dir.file('pkg')
    mkdirSync(pkg, { recursive: true })
    const resolve = (id: string) => {
      expect(id).toBe('@flagsync/dashboard/package.json')
      return join(pkg, 'package.json')
    }
    expect(installedDashboardDir(resolve)).toBeUndefined()
    mkdirSync(join(pkg, 'dist'))
    writeFileSync(join(pkg, 'dist', 'index.html'), '<!doctype html>')
    expect(installedDashboardDir(resolve)).toBe(join(pkg, 'dist'))
    expect(
      installedDashboardDir(() => {
        throw new Error('Cannot find module')
      }),
    ).toBeUndefined()
    expect(resolveDashboardDir('off')).toBeUndefined()
    expect(resolveDashboardDir('/srv/dashboard')).toBe('/srv/dashboard')
  })
})

describe('a DASHBOARD_DIR without index.html', () => {
  it('is refused at start, naming DASHBOARD_DIR (the CLI exits 1); off and a built directory are accepted', () => {
    const empty = dir.file('empty')
    mkdirSync(empty, { recursive: true })
    for (const bad of ['/nonexistent', empty]) {
      expect(() => loadServiceConfig({ DASHBOARD_DIR: bad })).toThrow(ConfigError)
      expect(() => loadServiceConfig({ DASHBOARD_DIR: bad })).toThrow(
        `DASHBOARD_DIR must be a built dashboard, a directory with an index.html, or off (${JSON.stringify(bad)} has no index.html)`,
      )
    }
    expect(loadServiceConfig({ DASHBOARD_DIR: 'off' }).dashboardDir).toBe('off')
    expect(loadServiceConfig({ DASHBOARD_DIR: ` ${dist} ` }).dashboardDir).toBe(dist)
    expect(loadServiceConfig({}).dashboardDir).toBeUndefined()
  })

  it('once its index.html is gone after the start, / is a 404 whose message says not found', async () => {
    const gone = dir.file('gone')
    mkdirSync(gone, { recursive: true })
    writeFileSync(join(gone, 'index.html'), '<!doctype html>')
    const h = await startHarness('sqlite', { env: { DASHBOARD_DIR: gone } })
    try {
      expect((await h.request('/', { headers: { Accept: HTML } })).status).toBe(200)
      rmSync(join(gone, 'index.html'))
      const res = await h.call('/', { headers: { Accept: HTML } })
      expect(res.status).toBe(404)
      expect(res.body).toEqual({
        error: `not found: the dashboard has no index.html in ${JSON.stringify(gone)}`,
        code: 'not_found',
      })
    } finally {
      await h.stop()
    }
  })
})
