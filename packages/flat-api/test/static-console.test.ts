import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '@flagsync/test-support/temp-dir'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const dir = tempDir('flagsync-console-')
let server: TestServer

beforeAll(async () => {
  mkdirSync(join(dir.path, 'assets'))
  mkdirSync(join(dir.path, 'nested', 'assets'), { recursive: true })
  writeFileSync(join(dir.path, 'index.html'), '<!doctype html><title>console</title>')
  writeFileSync(join(dir.path, 'sw.js'), '// service worker')
  writeFileSync(join(dir.path, 'assets', 'app-3f9a2c1b.js'), 'export {}')
  writeFileSync(join(dir.path, 'nested', 'assets', 'x.js'), 'export {}')
  mkdirSync(join(dir.path, 'assets', 'docs'))
  writeFileSync(join(dir.path, 'assets', 'docs', 'index.html'), '<!doctype html><title>docs</title>')
  server = await startTestServer({ staticDir: dir.path })
})

afterAll(async () => {
  await server?.dispose()
  dir.remove()
})

describe('the static console folder (CONSOLE_DIR)', () => {
  it('serves assets/ as immutable for a year and revalidates everything else on each load', async () => {
    const cacheControl = async (path: string) => {
      const res = await fetch(`${server.url}${path}`)
      expect(res.status, path).toBe(200)
      await res.arrayBuffer()
      return res.headers.get('cache-control')
    }
    expect(await cacheControl('/assets/app-3f9a2c1b.js')).toBe('public, max-age=31536000, immutable')
    // A folder's index under assets/ has no hash in its name: it is revalidated like every page.
    for (const path of ['/', '/index.html', '/sw.js', '/nested/assets/x.js', '/assets/docs/']) {
      expect(await cacheControl(path), path).toBe('public, max-age=0')
    }
  })

  it('answers a missing asset and a path escaping the folder with the API’s JSON 404, never a cached 200', async () => {
    for (const path of ['/assets/missing-1234.js', '/assets/..%2f..%2fpackage.json']) {
      const res = await fetch(`${server.url}${path}`)
      expect(res.status, path).toBe(404)
      expect(res.headers.get('cache-control') ?? '', path).not.toContain('immutable')
      expect(await res.json(), path).toMatchObject({ error: expect.any(String) })
    }
  })
})

describe('errors for a file under assets/', () => {
  it('answer 416 and 412 as JSON that no cache may keep: no-store, no validators, never immutable', async () => {
    const cases: Array<[Record<string, string>, number, string]> = [
      [{ Range: 'bytes=100-200' }, 416, 'range_not_satisfiable'],
      [{ 'If-Match': '"not-this"' }, 412, 'precondition_failed'],
      [{ 'If-Unmodified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT' }, 412, 'precondition_failed'],
    ]
    for (const [headers, status, code] of cases) {
      const res = await fetch(`${server.url}/assets/app-3f9a2c1b.js`, { headers })
      expect(res.status, JSON.stringify(headers)).toBe(status)
      expect(res.headers.get('cache-control')).toBe('no-store')
      expect(res.headers.get('etag')).toBeNull()
      expect(res.headers.get('last-modified')).toBeNull()
      expect(res.headers.get('content-type')).toMatch(/^application\/json/)
      expect(await res.json()).toMatchObject({ error: expect.any(String), code })
    }
    // The same file, asked for properly, is still the immutable asset.
    const ok = await fetch(`${server.url}/assets/app-3f9a2c1b.js`, { headers: { Range: 'bytes=0-2' } })
    expect([ok.status, await ok.text()]).toEqual([206, 'exp'])
    expect(ok.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
  })
})
