import type { Browser, Page } from 'playwright-core'
import { expect } from 'vitest'
import { flagsOf, putFlag } from '../../packages/flag-service/test/flags/support.js'
import { type Harness, startHarness } from '../../packages/flag-service/test/harness.js'
import { launchChromium, newPage } from './browser.js'
import { type BundlePage, serveBundlePage } from './bundle-page.js'

/**
 * One scenario for pages that read flags through OFREP with a client key: a page on its own origin shows
 * `banner` and `color` (`#banner`, `#color`), and toggles made through the flag service's REST API reach it over
 * the refresh stream. Each suite brings the page's script (`entry`); the page's query string carries `api`, `key` and
 * `env` (Production's id, where impressions go).
 */
const FLAG_PAGE = `<!doctype html><html><head><title>OFREP</title></head><body>
<p>banner: <output id="banner">loading</output></p><p>color: <output id="color">loading</output></p>
<script type="module" src="/bundle.js"></script></body></html>`

export interface FlagPageScenario {
  h: Harness
  browser: Browser
  /**
   * Opens the page with a new client key of Production, the flags seeded; `watch` sees the page before it loads,
   * `streams` lists its refresh URLs.
   */
  open(
    label: string,
    errors: string[],
    watch?: (page: Page) => void,
  ): Promise<{ page: Page; production: string; streams: string[] }>
  /** Turns `banner` off and `color` white through the REST API; the page must show both. */
  toggle(page: Page, production: string): Promise<void>
  close(): Promise<void>
}

export async function startFlagPageScenario(entry: string): Promise<FlagPageScenario> {
  const pages: BundlePage = await serveBundlePage(FLAG_PAGE, entry)
  const h = await startHarness('sqlite', { env: { CORS_ORIGINS: pages.origin } })
  const browser = await launchChromium()
  return {
    h,
    browser,
    async open(label, errors, watch) {
      const production = await seedProduction(h)
      const page = await newPage(browser, label, errors)
      watch?.(page)
      const streams: string[] = []
      page.on('request', (r) => {
        if (r.url().includes('/ofrep/v1/events')) streams.push(r.url())
      })
      const query = new URLSearchParams({ api: h.url, key: await clientKey(h, production, label), env: production })
      await page.goto(`${pages.origin}/?${query}`)
      await expect.poll(() => page.locator('#banner').textContent()).toBe('true')
      expect(await page.locator('#color').textContent()).toBe('black')
      await expect.poll(() => streams.length).toBeGreaterThan(0)
      return { page, production, streams }
    },
    async toggle(page, production) {
      expect((await flagsOf(h, production).patch('banner', { is_enabled: false })).status).toBe(200)
      await expect.poll(() => page.locator('#banner').textContent(), { timeout: 10_000 }).toBe('false')
      expect((await flagsOf(h, production).patch('color', { default_value: 'white', rules: [] })).status).toBe(200)
      await expect.poll(() => page.locator('#color').textContent(), { timeout: 10_000 }).toBe('white')
    },
    async close() {
      await browser.close()
      await h.dispose()
      await pages.close()
    },
  }
}

/** Production's id, with `banner` on and `color` grey but black for country DE (a rule the page must not see). */
async function seedProduction(h: Harness): Promise<string> {
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
  return production
}

/** A client key of the environment: the kind a page may show (it reads flags and nothing else). */
async function clientKey(h: Harness, environmentId: string, name: string): Promise<string> {
  const key = await h.call(`/api/projects/${h.defaultProjectId}/keys`, {
    method: 'POST',
    as: h.admin,
    body: { name, environment_id: environmentId, kind: 'client' },
  })
  expect(key.status, JSON.stringify(key.body)).toBe(200)
  expect(key.body.key).toMatch(/^pk_live_/)
  return key.body.key as string
}
