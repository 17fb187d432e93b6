/**
 * The impressions chart fed by a real app: examples/evaluate (its compiled
 * entry, as `npm start` runs it) evaluates two flags for its four demo users
 * through the flag client and OpenFeature, with an SDK key created here, and
 * its flag client reports those evaluations to the service's ingest route.
 * The dashboard's impressions page then charts them per served value.
 */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { axeViolations } from './axe.js'
import { launchChromium, screenshot, watchErrors } from './browser.js'
import { type ServiceHarness, startService } from './service-harness.js'
import { signIn } from './sign-in.js'

const run = promisify(execFile)
const EXAMPLE = fileURLToPath(new URL('../../examples/evaluate/dist/main.js', import.meta.url))
const ADMIN = { email: 'admin@example.com', password: 'impressions e2e pw' }
const WITHIN = { timeout: 15_000, interval: 100 }
let service: ServiceHarness
let call: ServiceHarness['call']
let browser: Browser
let page: Page
let production = ''
let projectId = ''
const errors: string[] = []

interface Stats {
  flag_key: string
  total: number
  true_count: number
  false_count: number
  unique_users: number
}

beforeAll(async () => {
  service = await startService({ prefix: 'flagsync-e2e-dashboard-impressions-', admin: ADMIN })
  call = service.call
  projectId = service.projectId
  production = service.environmentId('production')
  // new-checkout: on for NL, BE and DE (alice, carol, dave), off for bob, so the two lines differ; dark-mode: on.
  for (const flag of [
    {
      key: 'new-checkout',
      is_enabled: true,
      rollout_percentage: 0,
      rules: [{ attribute: 'country', operator: 'equals', values: ['NL', 'BE', 'DE'] }],
    },
    { key: 'dark-mode', is_enabled: true },
  ]) {
    expect((await call('POST', `/api/environments/${production}/flags`, flag)).status).toBe(200)
  }
  browser = await launchChromium()
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  context.setDefaultTimeout(10_000)
  page = await context.newPage()
  watchErrors(page, 'page', errors)
})

afterAll(async () => {
  await browser?.close()
  service?.close()
})

describe('the impressions chart after examples/evaluate reports impressions', () => {
  it('runs the example with an SDK key of the environment; its flag client delivers the impressions', async () => {
    const key = await call<{ key: string }>('POST', `/api/projects/${projectId}/keys`, {
      name: 'evaluate example',
      environment_id: production,
    })
    expect(key.status).toBe(200)
    const { stdout } = await run(process.execPath, [EXAMPLE], {
      env: { ...process.env, FLAGSYNC_URL: service.url, SDK_KEY: key.body.key, FLAGSYNC_FLAGS: 'new-checkout' },
      timeout: 30_000,
    })
    expect(stdout).toContain('OpenFeature and the flag client agree on all 4 evaluations.')
    expect(stdout).toMatch(/alice .*→ true\s+\(TARGETING_MATCH\)/)
    expect(stdout).toMatch(/bob .*→ false/)
    // The example closes its client before exiting, which sends what is queued: the impressions are there now.
    const stats = await call<Stats[]>('GET', `/api/environments/${production}/impressions/stats`)
    const checkout = stats.body.find((s) => s.flag_key === 'new-checkout')
    expect(checkout?.unique_users).toBe(4)
    // Three users on, one off, each evaluated the same number of times by both sections.
    expect(checkout?.true_count).toBe(3 * (checkout?.false_count ?? 0))
    expect(checkout?.false_count ?? 0).toBeGreaterThanOrEqual(2)
    expect(stdout).toContain(`Impressions: ${checkout?.total} sent to ${service.url}.`)
  })

  it('charts them in the dashboard per served value, with the totals of the stats route', async () => {
    const stats = (await call<Stats[]>('GET', `/api/environments/${production}/impressions/stats`)).body
    const checkout = stats.find((s) => s.flag_key === 'new-checkout')
    if (!checkout) throw new Error('no impressions of new-checkout')
    await signIn(page, service.url, ADMIN)
    // The project's environments answer late, as on a loaded machine or a slow network: the impressions page opens
    // before they arrive (a first visit has none cached) and must show the default environment once they do.
    let held: (() => void) | undefined
    const arrived = new Promise<void>((resolve) => {
      held = resolve
    })
    await page.route(`**/api/projects/${projectId}/environments`, async (route) => {
      await arrived
      await route.continue()
    })
    await page.getByRole('link', { name: 'Default' }).click()
    await page.getByRole('tab', { name: 'Impressions' }).click()
    await page.getByRole('heading', { name: 'Impressions' }).waitFor()
    held?.()
    // Waits for the held requests' handlers to continue them; a plain unroute lets Playwright continue them too.
    await page.unrouteAll({ behavior: 'wait' })
    await page.getByLabel('Flag').selectOption('new-checkout')
    await expect.poll(() => page.locator('dd[data-total="total"]').textContent(), WITHIN).toBe(String(checkout.total))
    expect(await page.locator('dd[data-total="users"]').textContent()).toBe('4')

    const { true_count: on, false_count: off } = checkout
    // One point per minute: the example's evaluations fall in one or two minutes.
    const chart = page.getByRole('img', {
      name: new RegExp(
        `^Evaluations of new-checkout per 1 min, by served value: (true ${on}, false ${off}|false ${off}, true ${on})$`,
      ),
    })
    await chart.waitFor()
    expect(await chart.locator('canvas').count()).toBe(1)
    const legend = await chart.locator('.u-legend .u-series .u-label').allTextContents()
    expect(legend.slice(1).sort()).toEqual(['false', 'true'])
    // The points are drawn (chart.tsx's first two series colors), inside the plot: evaluations within one
    // minute make one bucket, which must sit mid-chart, not on the edge of a range widened to years.
    const drawn = await chart.locator('canvas').evaluate((canvas: HTMLCanvasElement) => {
      const { data } = canvas.getContext('2d')?.getImageData(0, 0, canvas.width, canvas.height) ?? { data: [] }
      const near = (i: number, [r, g, b]: number[]) =>
        Math.abs((data[i] ?? 0) - (r ?? 0)) < 24 &&
        Math.abs((data[i + 1] ?? 0) - (g ?? 0)) < 24 &&
        Math.abs((data[i + 2] ?? 0) - (b ?? 0)) < 24 &&
        (data[i + 3] ?? 0) > 200
      const found = { first: 0, second: 0, minX: canvas.width, maxX: 0, minY: canvas.height }
      for (let i = 0; i < data.length; i += 4) {
        const first = near(i, [0x43, 0x38, 0xca])
        const second = near(i, [0x04, 0x78, 0x57])
        if (!first && !second) continue
        if (first) found.first++
        if (second) found.second++
        const x = (i / 4) % canvas.width
        found.minX = Math.min(found.minX, x)
        found.maxX = Math.max(found.maxX, x)
        found.minY = Math.min(found.minY, Math.floor(i / 4 / canvas.width))
      }
      return { ...found, width: canvas.width, height: canvas.height }
    })
    expect(drawn.first).toBeGreaterThan(5)
    expect(drawn.second).toBeGreaterThan(5)
    expect(drawn.minX / drawn.width).toBeGreaterThan(0.25)
    expect(drawn.maxX / drawn.width).toBeLessThan(0.9)
    expect(drawn.minY / drawn.height).toBeGreaterThan(0.03)

    const rows = page.locator('table.impressions tbody tr')
    await expect.poll(() => rows.count(), WITHIN).toBe(Math.min(20, checkout.total))
    const users = new Set(await rows.locator('td:nth-child(2)').allTextContents())
    expect([...users].sort()).toEqual(['alice', 'bob', 'carol', 'dave'])
    await screenshot(page, 'dashboard-impressions-evaluate-example')
    expect(await axeViolations(page)).toEqual([])

    await page.setViewportSize({ width: 390, height: 844 })
    await chart.waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    // The chart follows the narrower page: the whole of it is visible, not scrolled inside its box.
    await expect
      .poll(() => chart.locator('canvas').evaluate((c: HTMLCanvasElement) => c.getBoundingClientRect().right), WITHIN)
      .toBeLessThanOrEqual(390)
    await screenshot(page, 'dashboard-impressions-evaluate-example-390')
    expect(errors).toEqual([])
  })
})
