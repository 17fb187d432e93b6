/**
 * A flag's lifecycle in the dashboard: tags set in the editor and a tag filter, an owner, a stale mark on a flag
 * whose change history is 40 days old (its change-log rows aged in the SQLite file: what a flag untouched for that
 * long has), and archive/restore while an SDK stream on a server key is connected: the flag leaves the stream and
 * the table, and comes back exactly. axe, 390 px.
 */
import { TABLES } from '@flagsync/store'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import { tempDir } from '@flagsync/test-support/temp-dir'
import knex from 'knex'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { axeViolations } from './axe.js'
import { launchChromium, newPage, screenshot } from './browser.js'
import { type ServiceHarness, startService } from './service-harness.js'
import { signIn } from './sign-in.js'

const ADMIN = { email: 'ada@example.com', password: 'lifecycle e2e password' }
const DAY = 86_400_000

const dir = tempDir('flagsync-e2e-lifecycle-db-')
const database = dir.file('service.sqlite')
let service: ServiceHarness
let browser: Browser
let page: Page
let production = ''
let sdkKey = ''
const errors: string[] = []

const put = async (env: string, flag: Record<string, unknown>) => {
  const res = await service.call('POST', `/api/environments/${env}/flags`, flag)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
}
const row = (key: string) => page.locator(`table.flags tbody tr[data-flag="${key}"]`)
const shownKeys = () =>
  page.locator('table.flags tbody tr[data-flag]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-flag')))

/** Moves every change-log row of a flag back in time, as if it had been written that long ago. */
async function age(key: string, days: number): Promise<void> {
  const db = knex({ client: 'sqlite3', connection: { filename: database }, useNullAsDefault: true })
  try {
    await db(TABLES.changes)
      .where('key', key)
      .decrement('created_at', days * DAY)
  } finally {
    await db.destroy()
  }
}

beforeAll(async () => {
  service = await startService({
    prefix: 'flagsync-e2e-lifecycle-',
    admin: ADMIN,
    env: { DATABASE_URL: `sqlite:${database}` },
  })
  production = service.environmentId('production')
  const staging = service.environmentId('staging')
  const rules = [{ attribute: 'plan', operator: 'equals', values: ['pro'] }]
  await put(production, { key: 'checkout', is_enabled: true, rules })
  await put(staging, { key: 'checkout', is_enabled: true, rules })
  await put(production, { key: 'old-banner', is_enabled: true, description: 'the 2025 banner' })
  await put(staging, { key: 'search', is_enabled: false })
  await age('old-banner', 40)
  const key = await service.call<{ key: string }>('POST', `/api/projects/${service.projectId}/keys`, {
    name: 'server',
    environment_id: production,
  })
  sdkKey = key.body.key
  browser = await launchChromium()
  page = await newPage(browser, 'admin', errors, { timeoutMs: 10_000 })
  await signIn(page, service.url, ADMIN)
  await page.goto(`${service.url}/projects/${service.projectId}`)
  await row('checkout').waitFor()
})

afterAll(async () => {
  await browser?.close()
  service?.close()
  dir.remove()
})

describe('the flag lifecycle in the dashboard', () => {
  it('tags a flag and sets its owner in the editor; the table shows them and filters by tag', async () => {
    await page.getByRole('button', { name: 'Edit checkout in Production' }).click()
    const dialog = page.getByRole('dialog')
    await dialog.getByRole('textbox', { name: 'Tags', exact: true }).fill('Payments, web')
    await dialog.getByLabel('Owner').selectOption({ label: 'ada' })
    await dialog.getByRole('button', { name: 'Set tags and owner' }).click()
    await dialog.getByText('Tags and owner set for every environment.').waitFor()
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await dialog.waitFor({ state: 'hidden' })
    await row('checkout').locator('ul.chips li', { hasText: 'payments' }).waitFor()
    expect(await row('checkout').locator('ul.chips li').allTextContents()).toEqual(['payments', 'web'])
    expect(await row('checkout').locator('.flag-owner').textContent()).toBe('owner: ada')

    // A select's name is its label and its chosen option ("Tag any").
    const tagFilter = page.getByRole('combobox', { name: /^Tag\b/ })
    await tagFilter.selectOption('payments')
    await expect.poll(shownKeys).toEqual(['checkout'])
    await tagFilter.selectOption('')
    await expect.poll(shownKeys).toEqual(['checkout', 'old-banner', 'search'])
  })

  it('marks a flag that has served one value to everyone for 40 days as stale, and filters the stale ones', async () => {
    const cell = row('old-banner').locator('td[data-env="production"]')
    await cell.locator('.badge.stale').waitFor()
    expect(await cell.locator('.badge.stale').textContent()).toBe('stale: serves one value to everyone')
    expect(await cell.locator('.lifecycle').textContent()).toContain('changed 40 days ago · evaluated never')
    expect(await row('checkout').locator('.badge.stale').count()).toBe(0)
    await page.getByLabel('Stale only').check()
    await expect.poll(shownKeys).toEqual(['old-banner'])
    await page.getByLabel('Stale only').uncheck()
    expect(await axeViolations(page)).toEqual([])
  })

  it('archives a flag out of a connected SDK stream and the table, and restores it from the Archived view', async () => {
    const stream: SseReader = await openSse(`${service.url}/stream`, { Authorization: `Bearer ${sdkKey}` })
    try {
      await stream.waitFor((e) => e.event === 'ready')
      const from = stream.events.length
      await page.getByRole('button', { name: 'Edit old-banner in Production' }).click()
      await page.getByRole('dialog').getByRole('button', { name: 'Archive in every environment' }).click()
      const deleted = await stream.waitFor((e) => e.data.includes('"DELETE"'), 10_000, from)
      expect(JSON.parse(deleted.data)).toEqual({ type: 'DELETE', env_id: production, key: 'old-banner' })
      await expect.poll(shownKeys).toEqual(['checkout', 'search'])
      await page.getByRole('dialog').waitFor({ state: 'hidden' })

      // From the keyboard: the Archived view, then Restore.
      await page.getByRole('button', { name: 'Archived' }).focus()
      await page.keyboard.press('Enter')
      const archived = page.locator('li[data-archived="old-banner"]')
      await archived.waitFor()
      expect(await archived.textContent()).toContain('by ada@example.com, was in Production')
      expect(await axeViolations(page)).toEqual([])
      const mark = stream.events.length
      await archived.getByRole('button', { name: 'Restore old-banner' }).focus()
      await page.keyboard.press('Enter')
      const upsert = await stream.waitFor((e) => e.data.includes('"UPSERT"'), 10_000, mark)
      expect(JSON.parse(upsert.data).flag).toMatchObject({
        key: 'old-banner',
        is_enabled: true,
        description: 'the 2025 banner',
      })
      await page.getByText('No archived flags.').waitFor()
      await page.getByRole('button', { name: 'Flags', exact: true }).click()
      await expect.poll(shownKeys).toEqual(['checkout', 'old-banner', 'search'])
    } finally {
      stream.close()
    }
  })

  it('creates a flag with its tags and owner from the New flag dialog', async () => {
    await page.getByRole('button', { name: 'New flag' }).click()
    const editor = page.getByRole('dialog', { name: 'New flag' })
    await editor.getByLabel('Key').fill('new-search')
    await editor.getByRole('textbox', { name: 'Tags', exact: true }).fill('Search, web')
    await editor.getByLabel('Owner').selectOption({ label: 'ada' })
    await editor.getByRole('button', { name: 'Create flag' }).click()
    await editor.waitFor({ state: 'hidden' })
    await row('new-search').locator('ul.chips li', { hasText: 'search' }).waitFor()
    expect(await row('new-search').locator('ul.chips li').allTextContents()).toEqual(['search', 'web'])
    expect(await row('new-search').locator('.flag-owner').textContent()).toBe('owner: ada')
    const read = await service.call<{ tags: string[]; owner: number | null }>(
      'GET',
      `/api/environments/${production}/flags/new-search`,
    )
    expect(read.body).toMatchObject({ tags: ['search', 'web'], owner: expect.any(Number) })
  })

  it('fits a 390 px screen, axe clean, without console errors', async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    await row('checkout').locator('ul.chips').waitFor()
    const path = await screenshot(page, 'dashboard-lifecycle-390')
    expect(path).toMatch(/\.png$/)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    expect(await axeViolations(page)).toEqual([])
    expect(errors).toEqual([])
  })
})
