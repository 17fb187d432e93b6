/**
 * OpenFeature's own browser provider (`@openfeature/ofrep-web-provider` with
 * `@openfeature/web-sdk`, nothing of flagsync in the page) against the flag
 * service's OFREP routes: a page served by a real HTTP server of another
 * origin shows a flag, and a toggle through the REST API reaches it over the
 * refresh stream (the provider's polling is off by default, so only the
 * stream can deliver it). The page holds a client key, the kind meant to be shown.
 */
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { flagsOf, putFlag } from '../../packages/flag-service/test/flags/support.js'
import { type Harness, startHarness } from '../../packages/flag-service/test/harness.js'
import { launchChromium, newPage } from './browser.js'
import { type BundlePage, serveBundlePage } from './bundle-page.js'

const PAGE = `<!doctype html><html><head><title>OFREP</title></head><body>
<p>banner: <output id="banner">loading</output></p><p>color: <output id="color">loading</output></p>
<script type="module" src="/bundle.js"></script></body></html>`

/** The page's script: the published provider and SDK only, configured from the page's query string. */
const ENTRY = `import { OpenFeature, ProviderEvents } from '@openfeature/web-sdk'
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider'
const params = new URLSearchParams(location.search)
const provider = new OFREPWebProvider({
  baseUrl: params.get('api'),
  headers: [['Authorization', 'Bearer ' + params.get('key')]],
})
await OpenFeature.setContext({ targetingKey: 'visitor-1', country: 'DE' })
await OpenFeature.setProviderAndWait(provider)
const client = OpenFeature.getClient()
const render = () => {
  document.getElementById('banner').textContent = String(client.getBooleanValue('banner', false))
  document.getElementById('color').textContent = client.getStringValue('color', 'none')
}
client.addHandler(ProviderEvents.ConfigurationChanged, render)
render()`

describe('the published OFREP web provider in Chromium against the flag service', () => {
  let h: Harness
  let pages: BundlePage
  let origin: string
  let browser: Browser
  const errors: string[] = []

  beforeAll(async () => {
    pages = await serveBundlePage(PAGE, ENTRY)
    origin = pages.origin
    h = await startHarness('sqlite', { env: { CORS_ORIGINS: origin } })
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
    await h?.dispose()
    await pages?.close()
  })

  it('shows the flags, then a toggle made through the REST API, over the refresh stream', async () => {
    const envs = (await h.call(`/api/projects/${h.defaultProjectId}/environments`, { as: h.admin })).body as Array<{
      id: string
      slug: string
    }>
    const production = envs.find((e) => e.slug === 'production')?.id as string
    await putFlag(h, production, { key: 'banner', is_enabled: true })
    await putFlag(h, production, {
      key: 'color',
      is_enabled: true,
      flag_type: 'string',
      default_value: 'grey',
      rules: [{ attribute: 'country', operator: 'equals', values: ['DE'], variant: 'black' }],
    })

    const page: Page = await newPage(browser, 'ofrep', errors)
    const streams: string[] = []
    page.on('request', (r) => {
      if (r.url().includes('/ofrep/v1/events')) streams.push(r.url())
    })
    // A client key: the kind a page may show (it reads flags and nothing else).
    const key = await h.call(`/api/projects/${h.defaultProjectId}/keys`, {
      method: 'POST',
      as: h.admin,
      body: { name: 'ofrep page', environment_id: production, kind: 'client' },
    })
    expect(key.status, JSON.stringify(key.body)).toBe(200)
    expect(key.body.key).toMatch(/^pk_live_/)
    const query = new URLSearchParams({ api: h.url, key: key.body.key })
    await page.goto(`${origin}/?${query}`)
    await expect.poll(() => page.locator('#banner').textContent()).toBe('true')
    expect(await page.locator('#color').textContent()).toBe('black')
    await expect.poll(() => streams.length).toBeGreaterThan(0)

    expect((await flagsOf(h, production).patch('banner', { is_enabled: false })).status).toBe(200)
    await expect.poll(() => page.locator('#banner').textContent(), { timeout: 10_000 }).toBe('false')
    expect((await flagsOf(h, production).patch('color', { default_value: 'white', rules: [] })).status).toBe(200)
    await expect.poll(() => page.locator('#color').textContent(), { timeout: 10_000 }).toBe('white')
    expect(errors).toEqual([])
  })
})
