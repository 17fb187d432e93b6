/**
 * The project's change history as a team lead reads it: Ann asks to turn `checkout` on in Production (an
 * approval environment), Dan approves it in the dashboard, Ann turns `beta` on in Staging herself. The History
 * tab says "Dan approved change request #1 by Ann: …"; the person, flag, environment and date filters narrow
 * the list, and the page's URL opens the same filtered view. axe and 390 px.
 */
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { axeViolations } from './axe.js'
import { launchChromium, newPage, screenshot } from './browser.js'
import { type ServiceHarness, startService } from './service-harness.js'
import { signIn } from './sign-in.js'

const ADMIN = { email: 'admin@example.com', password: 'history e2e pw' }
const ANN = { email: 'ann@example.com', password: 'ann e2e password', name: 'Ann' }
const DAN = { email: 'dan@example.com', password: 'dan e2e password', name: 'Dan' }
const WITHIN = { timeout: 15_000, interval: 50 }
let service: ServiceHarness
let browser: Browser
let page: Page
let annId = 0
let requestId = 0
const errors: string[] = []

const history = () => page.getByRole('region', { name: 'Changes in Default' })
/** Each sentence with its keys written `key`, as `sentenceOf` words them; the page sets them as code. */
const sentences = (region = history()) =>
  region
    .locator('li[data-revision] .sentence')
    .evaluateAll((strongs) =>
      strongs.map((strong) =>
        [...strong.childNodes].map((n) => (n.nodeName === 'CODE' ? `\`${n.textContent}\`` : n.textContent)).join(''),
      ),
    )

beforeAll(async () => {
  service = await startService({ prefix: 'flagsync-e2e-dashboard-history-', admin: ADMIN })
  const { call, projectId } = service
  const production = service.environmentId('production')
  const staging = service.environmentId('staging')
  for (const who of [ANN, DAN]) {
    const user = await call<{ id: number }>('POST', '/api/users', { ...who, role: 'editor' })
    expect(user.status).toBe(200)
    if (who === ANN) annId = user.body.id
    const joined = await call('POST', `/api/projects/${projectId}/members`, { user_id: user.body.id, role: 'editor' })
    expect(joined.status).toBe(200)
  }
  expect(
    (await call('POST', `/api/environments/${production}/flags`, { key: 'checkout', is_enabled: false })).status,
  ).toBe(200)
  expect((await call('POST', `/api/environments/${staging}/flags`, { key: 'beta', is_enabled: false })).status).toBe(
    200,
  )
  const approval = `/api/projects/${projectId}/environments/${production}/require-approval`
  expect((await call('POST', approval, { require_approval: true })).status).toBe(200)
  const ann = { cookie: await service.login({ email: ANN.email, password: ANN.password }) }
  const filed = await call<{ id: number }>(
    'PATCH',
    `/api/environments/${production}/flags/checkout`,
    { is_enabled: true },
    ann,
  )
  expect(filed.status).toBe(202)
  requestId = filed.body.id
  expect((await call('PATCH', `/api/environments/${staging}/flags/beta`, { is_enabled: true }, ann)).status).toBe(200)
  browser = await launchChromium()
  page = await newPage(browser, 'dan', errors, { timeoutMs: 10_000 })
})

afterAll(async () => {
  await browser?.close()
  service?.close()
})

describe('the change history in the dashboard', () => {
  it('Dan approves Ann’s request; the history says so in a sentence', async () => {
    await signIn(page, service.url, DAN)
    await page.getByRole('link', { name: 'Default' }).click()
    await page.getByRole('tab', { name: 'Change requests' }).click()
    const request = page.locator(`li[data-request="${requestId}"]`)
    await request.getByRole('button', { name: 'Approve' }).click()
    await request.waitFor({ state: 'detached' })

    await page.getByRole('tab', { name: 'History' }).click()
    await expect
      .poll(sentences, WITHIN)
      .toEqual([
        `Dan approved change request #${requestId} by Ann: turned \`checkout\` on in Production`,
        'Ann turned `beta` on in Staging',
        'admin created `beta` in Staging',
        'admin created `checkout` in Production',
      ])
    // The keys read as code, never as raw backticks.
    const shown = await history().locator('li[data-revision] .sentence').allTextContents()
    expect(shown.filter((text) => text.includes('`'))).toEqual([])
    expect(await history().locator('li[data-revision] .sentence code').first().textContent()).toBe('checkout')
    expect(await axeViolations(page)).toEqual([])
  })

  it('filters by person, flag, environment and date, each kept in the URL', async () => {
    await page.getByLabel('Person').selectOption({ label: `Ann (${ANN.email})` })
    await expect
      .poll(sentences, WITHIN)
      .toEqual([
        `Dan approved change request #${requestId} by Ann: turned \`checkout\` on in Production`,
        'Ann turned `beta` on in Staging',
      ])
    expect(new URL(page.url()).searchParams.get('person')).toBe(String(annId))

    const flag = page.getByLabel('Flag')
    await flag.fill('checkout')
    await flag.press('Enter')
    await expect
      .poll(sentences, WITHIN)
      .toEqual([`Dan approved change request #${requestId} by Ann: turned \`checkout\` on in Production`])
    await page.getByRole('button', { name: 'Clear filters' }).click()
    await expect.poll(async () => (await sentences()).length, WITHIN).toBe(4)

    await page.getByLabel('Environment').selectOption({ label: 'Staging' })
    await expect.poll(sentences, WITHIN).toEqual(['Ann turned `beta` on in Staging', 'admin created `beta` in Staging'])
    expect(new URL(page.url()).searchParams.get('environment')).toBe(service.environmentId('staging'))

    const [today, tomorrow] = await page.evaluate(() => {
      const day = (d: Date) =>
        `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`
      const now = new Date()
      return [day(now), day(new Date(now.getFullYear(), now.getMonth(), now.getDate() + 1))]
    })
    await page.getByLabel('From', { exact: true }).fill(tomorrow as string)
    await expect.poll(() => history().getByText('No changes recorded.').count(), WITHIN).toBe(1)
    await page.getByLabel('From', { exact: true }).fill(today as string)
    await page.getByLabel('To', { exact: true }).fill(today as string)
    await expect.poll(async () => (await sentences()).length, WITHIN).toBe(2)
  })

  it('opens the same filtered view from its URL, also at 390 px', async () => {
    await page.getByRole('button', { name: 'Clear filters' }).click()
    await page.getByLabel('Person').selectOption({ label: `Ann (${ANN.email})` })
    const flag = page.getByLabel('Flag')
    await flag.fill('checkout')
    await flag.press('Enter')
    await expect.poll(async () => (await sentences()).length, WITHIN).toBe(1)
    const shared = page.url()

    const other = await page.context().newPage()
    await other.setViewportSize({ width: 390, height: 844 })
    await other.goto(shared)
    const region = other.getByRole('region', { name: 'Changes in Default' })
    await expect
      .poll(() => sentences(region), WITHIN)
      .toEqual([`Dan approved change request #${requestId} by Ann: turned \`checkout\` on in Production`])
    expect(await other.getByLabel('Flag').inputValue()).toBe('checkout')
    expect(await other.getByLabel('Person').inputValue()).toBe(String(annId))
    expect(await other.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await screenshot(other, 'dashboard-history-390')
    expect(await axeViolations(other)).toEqual([])
    await other.close()
    expect(errors).toEqual([])
  })

  it('wraps a 100-character flag key and its JSON rules within 390 px', async () => {
    const key = `very-long-key-${'x'.repeat(86)}`
    const staging = service.environmentId('staging')
    const values = ['NL', 'DE', 'BE', 'FR', 'ES', 'IT', 'PT', 'PL', 'SE', 'NO', 'DK', 'FI']
    const made = await service.call('POST', `/api/environments/${staging}/flags`, { key, is_enabled: true })
    expect(made.status).toBe(200)
    const rules = [{ attribute: 'country', operator: 'equals', values }]
    expect((await service.call('PATCH', `/api/environments/${staging}/flags/${key}`, { rules })).status).toBe(200)
    const narrow = await page.context().newPage()
    await narrow.setViewportSize({ width: 390, height: 844 })
    await narrow.goto(`${service.url}/projects/${service.projectId}?tab=history&flag=${key}`)
    const region = narrow.getByRole('region', { name: 'Changes in Default' })
    await expect.poll(() => region.locator('li[data-revision] .sentence').count(), WITHIN).toBe(2)
    expect(await narrow.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await screenshot(narrow, 'dashboard-history-long-key-390')
    await narrow.close()
    expect(errors).toEqual([])
  })
})
