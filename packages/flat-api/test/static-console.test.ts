import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../../../test/support/temp-dir.js'
import { startTestServer, type TestServer } from '../../../test/support/test-server.js'

const dir = tempDir('flagsync-console-')
let server: TestServer

beforeAll(async () => {
  mkdirSync(join(dir.path, 'assets'))
  mkdirSync(join(dir.path, 'nested', 'assets'), { recursive: true })
  writeFileSync(join(dir.path, 'index.html'), '<!doctype html><title>console</title>')
  writeFileSync(join(dir.path, 'sw.js'), '// service worker')
  writeFileSync(join(dir.path, 'assets', 'app-3f9a2c1b.js'), 'export {}')
  writeFileSync(join(dir.path, 'nested', 'assets', 'x.js'), 'export {}')
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
    for (const path of ['/', '/index.html', '/sw.js', '/nested/assets/x.js']) {
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
