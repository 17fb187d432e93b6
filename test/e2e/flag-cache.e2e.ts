/**
 * The flag cache of the shipped browser bundle in real Chromium, with DEFAULT
 * options: a page that saw the flat API's flags keeps them in its own
 * localStorage, and the next page, started offline, has them the moment
 * createFlagClient returns, before IndexedDB has even been opened. A set too
 * large for localStorage is kept in IndexedDB alone and still answers offline.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { tempDir } from '@flagsync/test-support/temp-dir'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, watchErrors } from './browser.js'

const BUNDLE = fileURLToPath(
  new URL('../../packages/sync-client/dist/bundle/sync-client.browser.min.js', import.meta.url),
)

/**
 * `online()` takes the server's flags and closes the client (which saves them); `offline()` creates a client with
 * the browser's own storage and no network, and reports what it had before `createFlagClient` returned.
 */
const PAGE = `<!doctype html>
<title>flag cache with default options</title>
<script type="module">
  import { createFlagClient, manualOnlineSource } from '/e2e/sync-client.js'
  const streamUrl = location.origin + '/stream'
  window.online = async (count) => {
    const flags = createFlagClient({ streamUrl })
    while (flags.allFlags().length < count) await new Promise((r) => setTimeout(r, 20))
    await flags.close()
  }
  window.offline = async () => {
    const opened = []
    const open = indexedDB.open
    indexedDB.open = function (name, version) {
      opened.push(name)
      return open.call(this, name, version)
    }
    const flags = createFlagClient({ streamUrl, online: manualOnlineSource(false) })
    const atOnce = { count: flags.allFlags().length, source: flags.status().source, opened: [...opened] }
    await flags.ready()
    const afterReady = { count: flags.allFlags().length, source: flags.status().source }
    await flags.close()
    indexedDB.open = open
    return { atOnce, afterReady }
  }
  window.stored = () => Object.keys(localStorage).map((key) => [key, localStorage.getItem(key).length])
  window.inIndexedDb = () =>
    new Promise((resolve, reject) => {
      const open = indexedDB.open('flagsync:flags', 10)
      open.onerror = () => reject(open.error)
      open.onsuccess = () => {
        const get = open.result.transaction('sets').objectStore('sets').get(streamUrl)
        get.onsuccess = () => {
          open.result.close()
          resolve(get.result ? get.result.flags.length : 0)
        }
      }
    })
</script>`

interface PageApi {
  online(count: number): Promise<void>
  offline(): Promise<{
    atOnce: { count: number; source: string; opened: string[] }
    afterReady: { count: number; source: string }
  }>
  stored(): Array<[string, number]>
  inIndexedDb(): Promise<number>
}

const dir = tempDir('flagsync-e2e-cache-')
let server: SpawnedServer
let browser: Awaited<ReturnType<typeof launchChromium>>
const errors: string[] = []

const flag = (i: number, description = '') => ({
  key: `flag-${String(i).padStart(4, '0')}`,
  is_enabled: i % 2 === 0,
  rollout_percentage: null,
  description,
  rules: [],
})

async function seed(flags: ReturnType<typeof flag>[]) {
  for (let i = 0; i < flags.length; i += 200) {
    const operations = flags
      .slice(i, i + 200)
      .map(({ key, ...record }) => ({ action: 'insert', collection: 'flags', recordId: key, record }))
    const res = await fetch(`${server.url}/sync`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ batchId: crypto.randomUUID(), operations }),
    })
    expect(res.status).toBe(200)
  }
}

async function openPage(): Promise<Page> {
  const page = await (await browser.newContext()).newPage()
  watchErrors(page, 'page', errors)
  const bundle = readFileSync(BUNDLE, 'utf8')
  await page.route(`${server.url}/e2e/**`, (route) => {
    const path = new URL(route.request().url()).pathname
    if (path === '/e2e/sync-client.js') return route.fulfill({ contentType: 'text/javascript', body: bundle })
    return route.fulfill({ contentType: 'text/html', body: PAGE })
  })
  await page.goto(`${server.url}/e2e/index.html`)
  await page.waitForFunction(() => 'offline' in window)
  return page
}

const call = <K extends keyof PageApi>(page: Page, name: K, ...args: Parameters<PageApi[K]>) =>
  page.evaluate(([n, a]) => (window as never as Record<string, (...x: unknown[]) => unknown>)[n]!(...a), [
    name,
    args,
  ] as const) as ReturnType<PageApi[K]>

beforeAll(async () => {
  server = await spawnServer('packages/flat-api/dist/cli.js', { DATABASE_URL: `sqlite:${dir.file('flags.sqlite')}` })
  browser = await launchChromium()
})

afterAll(async () => {
  await browser?.close()
  server?.kill()
  dir.remove()
})

describe('the flag cache of the browser bundle, default options', () => {
  it('answers an offline start from localStorage before createFlagClient returns, without opening IndexedDB', async () => {
    await seed(Array.from({ length: 50 }, (_, i) => flag(i)))
    const page = await openPage()
    await call(page, 'online', 50)
    const stored = await call(page, 'stored')
    expect(stored.map(([key]) => key)).toEqual(['flagsync:flags'])
    expect(await call(page, 'inIndexedDb')).toBe(50) // the copy is a copy: IndexedDB holds the set too

    await page.reload()
    await page.waitForFunction(() => 'offline' in window)
    const result = await call(page, 'offline')
    expect(result.atOnce).toEqual({ count: 50, source: 'cache', opened: [] })
    expect(result.afterReady).toEqual({ count: 50, source: 'cache' })
    expect(errors).toEqual([])
  })

  it('keeps a set too large for localStorage in IndexedDB, which still answers offline', async () => {
    // 1 100 flags of about 1 kB: past the 1 000 000 characters kept in localStorage.
    await seed(Array.from({ length: 1100 }, (_, i) => flag(100 + i, 'x'.repeat(1000))))
    const page = await openPage()
    await call(page, 'online', 1150)
    expect(await call(page, 'stored')).toEqual([])
    expect(await call(page, 'inIndexedDb')).toBe(1150)

    await page.reload()
    await page.waitForFunction(() => 'offline' in window)
    const result = await call(page, 'offline')
    expect(result.atOnce).toEqual({ count: 0, source: 'none', opened: ['flagsync:flags'] })
    expect(result.afterReady).toEqual({ count: 1150, source: 'cache' })
    expect(errors).toEqual([])
  })
})
