/**
 * The flag client's remote-evaluation mode in Chromium: a page served by a real HTTP server of another origin
 * holds a client key, shows the values the flag service evaluated for its context, and a toggle made through the
 * REST API reaches it over the refresh stream. Every evaluation answer the page receives is checked for rules.
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

/** The page's script: the remote flag client, configured from the page's query string. */
const ENTRY = `import { createRemoteFlagClient } from '@flagsync/flag-client'
const params = new URLSearchParams(location.search)
const flags = createRemoteFlagClient({
  baseUrl: params.get('api'),
  clientKey: params.get('key'),
  context: { user_id: 'visitor-1', country: 'DE' },
})
const render = () => {
  document.getElementById('banner').textContent = String(flags.isEnabled('banner'))
  document.getElementById('color').textContent = flags.getValue('color', undefined, 'none')
}
flags.subscribe((e) => { if (e.type === 'flags') render() })
await flags.ready()
render()`

describe('the remote flag client in Chromium against the flag service', () => {
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

  it('shows its values, then REST toggles over the refresh stream, and receives no rule', async () => {
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

    const page: Page = await newPage(browser, 'remote-flags', errors)
    const streams: string[] = []
    page.on('request', (r) => {
      if (r.url().includes('/ofrep/v1/events')) streams.push(r.url())
    })
    const answers: Promise<string>[] = []
    page.on('response', (r) => {
      if (r.url().includes('/ofrep/v1/evaluate/flags') && r.status() === 200) answers.push(r.text())
    })
    // A client key: the kind a page may show (it reads flags and nothing else).
    const key = await h.call(`/api/projects/${h.defaultProjectId}/keys`, {
      method: 'POST',
      as: h.admin,
      body: { name: 'remote page', environment_id: production, kind: 'client' },
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
    const received = (await Promise.all(answers)).join('')
    expect(received).toContain('"banner"')
    for (const rule of ['"rules"', '"attribute"', '"DE"', 'grey']) expect(received).not.toContain(rule)
    expect(errors).toEqual([])
  })
})
