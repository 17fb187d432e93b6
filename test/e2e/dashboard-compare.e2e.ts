/**
 * Compare in the dashboard: Staging and Production side by side, three flags chosen from the keyboard and
 * promoted in one step, after which Production serves them; a flag edited in Production meanwhile (through the
 * API) makes the next promotion a 409 that the page names per flag, and Refresh lets it through. axe, 390 px.
 */
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { axeViolations } from './axe.js'
import { launchChromium, newPage, screenshot } from './browser.js'
import { type ServiceHarness, startService } from './service-harness.js'
import { signIn } from './sign-in.js'

const ADMIN = { email: 'admin@example.com', password: 'compare e2e password' }
const WITHIN = { timeout: 15_000, interval: 25 }

let service: ServiceHarness
let browser: Browser
let page: Page
let staging = ''
let production = ''
const errors: string[] = []

type Flag = Record<string, unknown> & { key: string; revision: number }
const flagIn = async (env: string, key: string) =>
  await service.call<Flag>('GET', `/api/environments/${env}/flags/${key}`)
const put = async (env: string, flag: Record<string, unknown>) => {
  const res = await service.call('POST', `/api/environments/${env}/flags`, flag)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
}
const card = (key: string) => page.locator(`ul.compare-list > li[data-flag="${key}"]`)
/**
 * The field names (`tbody th`) under `scope` broken inside a word (`rule|s`): a name may wrap only after a `_`,
 * so each of its text runs (`rollout`, `_`, `percentage`) must sit on one line.
 */
const brokenFieldNames = (scope = 'ul.compare-list') =>
  page.locator(`${scope} table.diff tbody th`).evaluateAll((ths) =>
    ths
      .filter((th) => {
        const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT)
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          const range = document.createRange()
          range.selectNodeContents(node)
          if (range.getClientRects().length > 1) return true
        }
        return false
      })
      .map((th) => th.textContent),
  )
const COUNTRIES = ['NL', 'DE', 'BE', 'FR', 'ES', 'IT', 'PT', 'PL', 'SE', 'NO', 'DK', 'FI', 'AT', 'CH', 'IE', 'LU']

beforeAll(async () => {
  service = await startService({ prefix: 'flagsync-e2e-compare-', admin: ADMIN })
  staging = service.environmentId('staging')
  production = service.environmentId('production')
  await put(staging, { key: 'checkout', is_enabled: true, rollout_percentage: 50, description: 'new flow' })
  await put(production, { key: 'checkout', is_enabled: false, rollout_percentage: 10 })
  await put(staging, { key: 'banner', is_enabled: true })
  await put(staging, { key: 'search-v2', is_enabled: true, prerequisites: [{ flag_key: 'banner' }] })
  await put(staging, { key: 'same', is_enabled: true })
  await put(production, { key: 'same', is_enabled: true })
  await put(production, { key: 'legacy', is_enabled: true })
  await put(staging, { key: 'pricing', is_enabled: true, rollout_percentage: 25 })
  await put(production, { key: 'pricing', is_enabled: true, rollout_percentage: 5 })
  // A long JSON value beside a short field name.
  await put(staging, {
    key: 'geo',
    is_enabled: true,
    rules: [{ attribute: 'country', operator: 'equals', values: COUNTRIES }],
  })
  await put(production, { key: 'geo', is_enabled: true })
  browser = await launchChromium()
  page = await newPage(browser, 'admin', errors, { timeoutMs: 10_000 })
  await signIn(page, service.url, ADMIN)
})

afterAll(async () => {
  await browser?.close()
  service?.close()
})

describe('comparing environments in the dashboard', () => {
  it('shows Staging and Production side by side and promotes three chosen flags from the keyboard', async () => {
    await page.goto(`${service.url}/projects/${service.projectId}?tab=compare`)
    await page.getByRole('heading', { name: 'Compare environments' }).waitFor()
    await page.getByLabel('From').selectOption({ label: 'Staging' })
    await page.getByLabel('To').selectOption({ label: 'Production' })
    await card('checkout').waitFor()
    // Differences only: the flag that reads the same in both is left out until the filter is off.
    expect(
      await page.locator('ul.compare-list > li').evaluateAll((li) => li.map((l) => l.getAttribute('data-flag'))),
    ).toEqual(['banner', 'checkout', 'geo', 'legacy', 'pricing', 'search-v2'])
    expect(await brokenFieldNames()).toEqual([])
    expect(await card('legacy').textContent()).toContain('only in Production')
    expect(await card('banner').textContent()).toContain('only in Staging')
    const rows = await card('checkout')
      .locator('tbody tr')
      .evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)))
    expect(rows).toEqual([
      ['description', 'null', '"new flow"'],
      ['is_enabled', 'false', 'true'],
      ['rollout_percentage', '10', '50'],
    ])
    await page.getByLabel('Differences only').uncheck()
    await card('same').waitFor()
    expect(await card('same').textContent()).toContain('same in both')
    await page.getByLabel('Differences only').check()
    expect(await axeViolations(page)).toEqual([])

    // search-v2 needs banner, promoted in the same step.
    for (const key of ['checkout', 'banner', 'search-v2']) {
      await card(key).getByRole('checkbox').focus()
      await page.keyboard.press('Space')
    }
    const promote = page.getByRole('button', { name: 'Promote 3 flags to Production' })
    await promote.focus()
    await page.keyboard.press('Enter')
    const dialog = page.getByRole('dialog', { name: 'Promote 3 flags to Production?' })
    await dialog.waitFor()
    expect(await dialog.locator('section.promotion-item h3').allTextContents()).toEqual([
      'banner (new in Production)',
      'checkout ',
      'search-v2 (new in Production)',
    ])
    expect(await dialog.getByRole('table', { name: 'What promoting checkout changes in Production' }).isVisible()).toBe(
      true,
    )
    expect(await axeViolations(page)).toEqual([])
    await dialog.getByRole('button', { name: 'Promote 3 flags' }).click()
    await page.getByRole('status').filter({ hasText: 'Promoted' }).waitFor()
    expect(await dialog.count()).toBe(0)
    for (const key of ['checkout', 'banner', 'search-v2']) {
      const there = await flagIn(production, key)
      expect(there.status, key).toBe(200)
      expect(there.body.is_enabled).toBe(true)
    }
    expect((await flagIn(production, 'checkout')).body).toMatchObject({
      rollout_percentage: 50,
      description: 'new flow',
    })
    await expect.poll(() => card('checkout').count(), WITHIN).toBe(0)
    // The flags table shows them on in Production.
    await page.getByRole('tab', { name: 'Flags' }).click()
    for (const key of ['checkout', 'banner', 'search-v2']) {
      const cell = page.locator(`tr[data-flag="${key}"] td[data-env="production"]`)
      await expect.poll(() => cell.getAttribute('data-enabled'), WITHIN).toBe('true')
    }
    await page.getByRole('tab', { name: 'Compare' }).click()
    await page.getByRole('heading', { name: 'Compare environments' }).waitFor()
    expect(errors).toEqual([])
  })

  it('names each flag changed in Production since the comparison, and Refresh lets the promotion through', async () => {
    await put(staging, { key: 'checkout', is_enabled: true, rollout_percentage: 75, description: 'new flow' })
    await page.goto(`${service.url}/projects/${service.projectId}?tab=compare`)
    await page.getByRole('heading', { name: 'Compare environments' }).waitFor()
    await page.getByLabel('From').selectOption({ label: 'Staging' })
    await page.getByLabel('To').selectOption({ label: 'Production' })
    await card('checkout').waitFor()
    for (const key of ['checkout', 'pricing']) await card(key).getByRole('checkbox').check()
    // Meanwhile, someone edits both in Production through the API.
    for (const key of ['checkout', 'pricing']) {
      const res = await service.call('PATCH', `/api/environments/${production}/flags/${key}`, { rollout_percentage: 1 })
      expect(res.status).toBe(200)
    }
    await page.getByRole('button', { name: 'Promote 2 flags to Production' }).click()
    const dialog = page.getByRole('dialog', { name: 'Promote 2 flags to Production?' })
    const answered = page.waitForResponse((r) => r.url().endsWith('/promote'))
    await dialog.getByRole('button', { name: 'Promote 2 flags' }).click()
    expect((await answered).status()).toBe(409)
    await page.getByRole('alert').filter({ hasText: 'Nothing was promoted: 2 flags changed in Production' }).waitFor()
    for (const key of ['checkout', 'pricing']) {
      const revision = (await flagIn(production, key)).body.revision
      expect(await card(key).locator('.conflict').textContent()).toContain(`now at revision ${revision}`)
      expect((await flagIn(production, key)).body.rollout_percentage).toBe(1)
    }
    await page.setViewportSize({ width: 390, height: 844 })
    const path = await screenshot(page, 'dashboard-compare-390')
    expect(path).toMatch(/\.png$/)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    expect(await brokenFieldNames()).toEqual([])
    expect(await axeViolations(page)).toEqual([])

    await card('checkout').getByRole('button', { name: 'Refresh' }).click()
    await expect.poll(() => card('checkout').locator('.conflict').count(), WITHIN).toBe(0)
    const rollout = card('checkout').locator('tbody tr', { hasText: 'rollout_percentage' })
    expect(await rollout.locator('td').allTextContents()).toEqual(['1', '75'])
    await page.getByRole('button', { name: 'Promote 2 flags to Production' }).click()
    await page.getByRole('dialog').getByRole('button', { name: 'Promote 2 flags' }).click()
    await page.getByRole('status').filter({ hasText: 'Promoted checkout, pricing' }).waitFor()
    expect((await flagIn(production, 'checkout')).body.rollout_percentage).toBe(75)
    expect((await flagIn(production, 'pricing')).body.rollout_percentage).toBe(25)
    expect(errors).toEqual([])
  })

  it('says which prerequisite to choose too when a flag would not fit Production', async () => {
    await put(staging, { key: 'gate', is_enabled: true })
    await put(staging, { key: 'gated', is_enabled: true, prerequisites: [{ flag_key: 'gate' }] })
    await page.setViewportSize({ width: 1280, height: 800 })
    await page.goto(`${service.url}/projects/${service.projectId}?tab=compare`)
    await page.getByRole('heading', { name: 'Compare environments' }).waitFor()
    await page.getByLabel('From').selectOption({ label: 'Staging' })
    await page.getByLabel('To').selectOption({ label: 'Production' })
    await card('gated').getByRole('checkbox').check()
    await page.getByRole('button', { name: 'Promote 1 flag to Production' }).click()
    const dialog = page.getByRole('dialog', { name: 'Promote 1 flag to Production?' })
    // On a phone the diff fits its card: field names wrap after a `_`, never inside a word.
    await page.setViewportSize({ width: 390, height: 844 })
    const overflowing = await dialog
      .locator('section.promotion-item')
      .evaluateAll((sections) => sections.filter((el) => el.scrollWidth > el.clientWidth).length)
    expect(overflowing).toBe(0)
    expect(await brokenFieldNames('dialog')).toEqual([])
    const answered = page.waitForResponse((r) => r.url().endsWith('/promote'))
    await dialog.getByRole('button', { name: 'Promote 1 flag' }).click()
    expect((await answered).status()).toBe(422)
    const alert = dialog.getByRole('alert')
    await alert.waitFor()
    expect(await alert.locator('li').allTextContents()).toEqual([
      'gated needs gate, which Production does not have: choose gate too.',
    ])
    expect((await flagIn(production, 'gated')).status).toBe(404)
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    expect(errors).toEqual([])
  })
})
