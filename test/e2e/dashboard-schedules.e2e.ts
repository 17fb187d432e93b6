/**
 * Scheduled flag changes in the dashboard: the admin edits a flag's description, schedules the edit for two seconds
 * later with "Apply at…" instead of saving it, sees it under Upcoming in the Schedules tab and then, applied by the
 * service, under Past; the flag now reads so. A schedule made through the API is cancelled from the table. Both
 * tables scroll within a 390 px page.
 */
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { axeViolations } from './axe.js'
import { launchChromium, newPage, screenshot } from './browser.js'
import { type ServiceHarness, startService } from './service-harness.js'
import { signIn } from './sign-in.js'

const ADMIN = { email: 'admin@example.com', password: 'schedules e2e pw' }
const WITHIN = { timeout: 15_000, interval: 50 }
let service: ServiceHarness
let browser: Browser
let page: Page
let production = ''
const errors: string[] = []

beforeAll(async () => {
  service = await startService({
    prefix: 'flagsync-e2e-dashboard-schedules-',
    admin: ADMIN,
    env: { SCHEDULE_POLL_MS: '200' },
  })
  production = service.environmentId('production')
  const created = await service.call('POST', `/api/environments/${production}/flags`, {
    key: 'launch',
    is_enabled: true,
  })
  expect(created.status).toBe(200)
  browser = await launchChromium()
  page = await newPage(browser, 'admin', errors, { timeoutMs: 10_000 })
  await signIn(page, service.url, ADMIN)
  await page.getByRole('link', { name: 'Default' }).click()
  await page.getByRole('heading', { name: 'Default', level: 1 }).waitFor()
})

afterAll(async () => {
  await browser?.close()
  service?.close()
})

/** The browser's local date and time `ms` from now, as a `datetime-local` input takes it (to the second). */
const localInMs = (ms: number) =>
  page.evaluate((ahead) => {
    const d = new Date(Date.now() + ahead)
    const two = (n: number) => String(n).padStart(2, '0')
    return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`
  }, ms)

describe('scheduled changes in the dashboard', () => {
  it('schedules an edit from the flag editor and shows it applied in the table', async () => {
    await page.getByRole('button', { name: 'Edit launch in Production' }).click()
    const editor = page.getByRole('dialog', { name: 'launch in Production' })
    await editor.getByLabel('Description').fill('launched on time')
    await editor.getByText('Apply at…').click()
    await editor.getByLabel('Apply the edited fields at').fill(await localInMs(2500))
    await editor.getByRole('button', { name: 'Schedule' }).click()
    await expect.poll(() => editor.getByRole('status').textContent(), WITHIN).toMatch(/^Scheduled for /)
    await editor.getByRole('button', { name: 'Cancel' }).click()

    await page.getByRole('tab', { name: 'Schedules' }).click()
    const row = page.locator('tr[data-schedule="1"]')
    await expect.poll(() => row.locator('td').allTextContents(), WITHIN).toContain('description: "launched on time"')
    // Applied by the service at its time: the row moves to the past table with its outcome.
    await expect.poll(() => row.locator('td').nth(4).textContent(), WITHIN).toMatch(/^applied/)
    const flag = await service.call<{ description: string }>('GET', `/api/environments/${production}/flags/launch`)
    expect(flag.body.description).toBe('launched on time')
    expect(await axeViolations(page)).toEqual([])
  })

  it('cancels an upcoming schedule from the table', async () => {
    const runAt = new Date(Date.now() + 3_600_000).toISOString()
    const made = await service.call<{ id: number }>('POST', `/api/environments/${production}/flags/launch/schedules`, {
      patch: { is_enabled: false },
      run_at: runAt,
    })
    expect(made.status).toBe(200)
    const row = page.locator(`tr[data-schedule="${made.body.id}"]`)
    await row.waitFor({ timeout: 10_000 })
    await row.getByRole('button', { name: `Cancel schedule ${made.body.id} of launch` }).click()
    await expect.poll(() => row.locator('td').nth(4).textContent(), WITHIN).toBe(`cancelled by ${ADMIN.email}`)
    const flag = await service.call<{ is_enabled: boolean }>('GET', `/api/environments/${production}/flags/launch`)
    expect(flag.body.is_enabled).toBe(true)
    // It never ran: the past table says when it was due, not that it ran then.
    expect(await row.locator('td').nth(2).textContent()).toMatch(/^not run \(was due /)
    expect(errors).toEqual([])
  })

  it('fits a 390 px page with long changes in both tables', async () => {
    await page.setViewportSize({ width: 390, height: 860 })
    const made = await service.call<{ id: number }>('POST', `/api/environments/${production}/flags/launch/schedules`, {
      patch: {
        description: 'a description long enough to widen a narrow table well past its screen',
        is_enabled: true,
      },
      run_at: new Date(Date.now() + 3_600_000).toISOString(),
    })
    expect(made.status).toBe(200)
    await page.locator(`tr[data-schedule="${made.body.id}"]`).waitFor({ timeout: 10_000 })
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await screenshot(page, 'dashboard-schedules-390')
    expect(errors).toEqual([])
  })
})
