/**
 * The shipped browser bundle in real Chromium with DEFAULT options (no
 * indexedDB injected): the flag client streams from the real flag service,
 * queues its impressions in the page's own IndexedDB and delivers them to the
 * service's ingest route, where they can be read back.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ImpressionFixture, startImpressionFixture } from '../../packages/flag-service/test/impressions/fixture.js'
import { launchChromium, watchErrors } from './browser.js'

const BUNDLE = fileURLToPath(
  new URL('../../packages/sync-client/dist/bundle/sync-client.browser.min.js', import.meta.url),
)
const WITHIN = { timeout: 20_000, interval: 100 }

/** The app: nothing but the stream URL and the key, so the defaults must work in a browser. */
const PAGE = `<!doctype html>
<title>impressions with default options</title>
<script type="module">
  import { createFlagClient } from '/e2e/sync-client.js'
  window.flagErrors = []
  window.start = async (sdkKey) => {
    const flags = createFlagClient({ streamUrl: location.origin + '/stream', sdkKey })
    flags.subscribe((e) => e.type === 'error' && window.flagErrors.push(e.error.message))
    window.flags = flags
    await flags.ready()
    const values = ['alice', 'bob', 'carol'].map((user_id) => flags.isEnabled('checkout', { user_id }))
    return { values, environmentId: flags.status().environmentId }
  }
</script>`

interface PageApi {
  start(sdkKey: string): Promise<{ values: boolean[]; environmentId: string | null }>
  flags: { impressionStatus(): unknown }
  flagErrors: string[]
}

let f: ImpressionFixture
let browser: Awaited<ReturnType<typeof launchChromium>>

beforeAll(async () => {
  f = await startImpressionFixture('sqlite')
  const created = await f.h.call(`/api/environments/${f.envId}/flags`, {
    method: 'POST',
    as: f.h.admin,
    body: { key: 'checkout', is_enabled: true },
  })
  expect(created.status).toBe(200)
  browser = await launchChromium()
})

afterAll(async () => {
  await browser?.close()
  await f?.dispose()
})

describe('the browser bundle with default options', () => {
  it('delivers impressions from the page’s own IndexedDB to the service', async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    const errors = watchErrors(page, 'page')
    // The page and the bundle are served on the service's origin, as an app served next to its API would be.
    const bundle = readFileSync(BUNDLE, 'utf8')
    await page.route(`${f.h.url}/e2e/**`, (route) => {
      const path = new URL(route.request().url()).pathname
      if (path === '/e2e/sync-client.js') return route.fulfill({ contentType: 'text/javascript', body: bundle })
      return route.fulfill({ contentType: 'text/html', body: PAGE })
    })
    await page.goto(`${f.h.url}/e2e/index.html`)
    await page.waitForFunction(() => 'start' in window)

    const result = await page.evaluate((sdkKey) => (window as unknown as PageApi).start(sdkKey), f.h.defaultSdkKey)
    expect(result).toEqual({ values: [true, true, true], environmentId: f.envId })

    // Delivered after the default 2 s flush window.
    await expect.poll(async () => (await f.list('limit=10')).body.total, WITHIN).toBe(3)
    const { items } = (await f.list('limit=10')).body as { items: Array<{ flag_key: string; user_id: string }> }
    expect(items.map((i) => `${i.flag_key}/${i.user_id}`).sort()).toEqual([
      'checkout/alice',
      'checkout/bob',
      'checkout/carol',
    ])

    const inPage = await page.evaluate(async () => {
      const w = window as unknown as PageApi
      return {
        status: w.flags.impressionStatus(),
        errors: w.flagErrors,
        databases: (await indexedDB.databases()).map((d) => d.name),
      }
    })
    expect(inPage.status).toMatchObject({ storage: 'indexeddb', delivered: 3, queued: 0, dropped: 0, lastError: null })
    expect(inPage.errors).toEqual([])
    expect(inPage.databases).toEqual(expect.arrayContaining(['flagsync:impressions', 'flagsync:flags']))
    expect(errors).toEqual([])
    await context.close()
  })
})
