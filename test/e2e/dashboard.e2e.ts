/**
 * The service's dashboard in Chromium, served by the compiled service at `/`:
 * sign in (with the lockout's remaining attempts), projects and environments,
 * the flag table and editor, toggles in two environments, and a second
 * browser context that sees a toggle within a second through the dashboard
 * stream. Screenshots go to test-results/e2e/dashboard-*.png.
 */

import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { tempDir } from '@flagsync/test-support/temp-dir'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { axeViolations } from './axe.js'
import { launchChromium, screenshot, watchErrors } from './browser.js'
import { signIn } from './sign-in.js'

const ADMIN = { email: 'admin@example.com', password: 'dashboard e2e pw' }
const WITHIN = { timeout: 15_000, interval: 50 }
const dir = tempDir('flagsync-e2e-dashboard-')
let server: SpawnedServer
let browser: Browser
let context: BrowserContext
let page: Page
const errors: string[] = []

/** The service's REST API as the admin, with a session of its own. */
async function adminApi<T>(method: string, path: string, body?: unknown): Promise<T> {
  const login = await fetch(`${server.url}/api/auth/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(ADMIN),
  })
  expect(login.status).toBe(200)
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { Cookie: cookie, 'X-Service-Request': 'true', 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  expect(res.status, `${method} ${path}`).toBeLessThan(300)
  return (res.status === 204 ? undefined : await res.json()) as T
}

async function signInAsAdmin(p: Page): Promise<void> {
  await signIn(p, server.url, ADMIN)
  await p.getByRole('navigation', { name: 'Projects' }).waitFor()
}

beforeAll(async () => {
  server = await spawnServer('packages/flag-service/dist/cli.js', {
    DATABASE_URL: `sqlite:${dir.file('service.sqlite')}`,
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    WORKSPACE_NAME: 'Acme',
    POLL_INTERVAL_MS: '200',
  })
  browser = await launchChromium()
  context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
  context.setDefaultTimeout(10_000)
  page = await context.newPage()
  watchErrors(page, 'page', errors)
})

afterAll(async () => {
  await browser?.close()
  server?.kill()
  dir.remove()
})

describe('the dashboard served by the flag service', () => {
  it('is served at / and the API keeps its JSON 404s', async () => {
    const html = await fetch(`${server.url}/projects/x`, { headers: { Accept: 'text/html' } })
    expect(html.status).toBe(200)
    expect(await html.text()).toContain('<div id="root">')
    const api = await fetch(`${server.url}/api/nope`, { headers: { Accept: 'text/html' } })
    expect(api.status).toBe(404)
    expect(await api.json()).toMatchObject({ code: 'not_found' })
  })

  it('signs in, saying how many attempts are left after a wrong password', async () => {
    await page.goto(server.url)
    await page.getByRole('heading', { name: 'Sign in to Acme' }).waitFor()
    await page.getByLabel('Email').fill(ADMIN.email)
    await page.getByLabel('Password').fill('wrong password')
    await page.getByRole('button', { name: 'Sign in' }).click()
    const alert = page.getByRole('alert')
    await expect
      .poll(() => alert.textContent(), WITHIN)
      .toBe('Wrong email or password. 4 attempts left before this email is locked for 15 minutes.')
    await screenshot(page, 'dashboard-01-wrong-password')
    await page.getByLabel('Password').fill(ADMIN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('link', { name: 'Default' }).waitFor()
    expect(await page.locator('header').textContent()).toContain('flagsync · Acme')
  })

  it('shows the lockout message once an email is locked', async () => {
    const other = await context.browser()?.newContext()
    const p = await (other as BrowserContext).newPage()
    await p.goto(server.url)
    for (let i = 0; i < 5; i++) {
      await p.getByLabel('Email').fill('nobody@example.com')
      await p.getByLabel('Password').fill(`wrong ${i}`)
      await p.getByRole('button', { name: 'Sign in' }).click()
      await expect.poll(() => p.getByRole('alert').textContent(), WITHIN).toMatch(i < 4 ? `${4 - i} attempt` : 'locked')
    }
    // The time of day is the browser's: only its shape is checked.
    expect(await p.getByRole('alert').textContent()).toMatch(
      /^Too many failed sign-ins for this email: it is locked\. Try again in 15 minutes \(at \d{1,2}:\d{2}( [AP]M)?\)\.$/,
    )
    await screenshot(p, 'dashboard-02-locked')
    await other?.close()
  })

  it('creates, renames a project, shows its SDK key once', async () => {
    await page.getByRole('button', { name: 'New project' }).click()
    const dialog = page.getByRole('dialog', { name: 'New project' })
    await dialog.getByLabel('Name').fill('Checkout Team')
    await dialog.getByRole('button', { name: 'Create project' }).click()
    const created = page.getByRole('dialog', { name: 'Project Checkout Team created' })
    expect(await created.getByLabel('SDK key').inputValue()).toMatch(/^sk_live_/)
    await screenshot(page, 'dashboard-03-project-created', { fullPage: false })
    await created.getByRole('button', { name: 'Done' }).click()
    await page.getByRole('heading', { name: 'Checkout Team', level: 1 }).waitFor()

    await page.getByRole('button', { name: 'Rename' }).click()
    const rename = page.getByRole('dialog', { name: 'Rename Checkout Team' })
    await rename.getByLabel('Name').fill('Checkout')
    await rename.getByRole('button', { name: 'Rename' }).click()
    await page.getByRole('heading', { name: 'Checkout', level: 1, exact: true }).waitFor()
    expect(await page.locator('.slug').textContent()).toBe('checkout')
    const projects = await adminApi<Array<{ name: string; slug: string }>>('GET', '/api/projects')
    expect(projects.map((p) => p.slug).sort()).toEqual(['checkout', 'default'])
  })

  it('lists environments with their colors, creates one with a derived slug, deletes one after naming what goes', async () => {
    await page.getByRole('tab', { name: 'Environments' }).click()
    const list = page.locator('ul.environments > li')
    await expect.poll(() => list.count(), WITHIN).toBe(3)
    expect(await list.locator('.env-name').allTextContents()).toEqual(['Production', 'Staging', 'Development'])
    expect(
      await list
        .first()
        .locator('.swatch')
        .evaluate((el) => getComputedStyle(el).backgroundColor),
    ).toBe('rgb(239, 68, 68)')
    await page.getByRole('button', { name: 'New environment' }).click()
    const dialog = page.getByRole('dialog', { name: 'New environment' })
    await dialog.getByLabel('Name').fill('QA Europe Ü')
    expect(await dialog.getByLabel('Slug').inputValue()).toBe('qa-europe-u')
    await screenshot(page, 'dashboard-04-new-environment', { fullPage: false })
    await dialog.getByRole('button', { name: 'Create environment' }).click()
    await expect.poll(() => list.count(), WITHIN).toBe(4)
    await page.getByRole('button', { name: 'Delete QA Europe Ü' }).click()
    const confirm = page.getByRole('dialog', { name: 'Delete environment QA Europe Ü?' })
    expect(await confirm.textContent()).toContain('Every flag of QA Europe Ü goes with it')
    await confirm.getByRole('button', { name: 'Delete QA Europe Ü' }).click()
    await expect.poll(() => list.count(), WITHIN).toBe(3)
    // Require approval, from the page, as the service stores it.
    const approval = page.getByRole('checkbox', { name: 'Staging requires approval' })
    await approval.click() // controlled: it turns checked once the service has stored it
    await expect.poll(() => approval.isChecked(), WITHIN).toBe(true)
    const projects = await adminApi<Array<{ id: string; slug: string }>>('GET', '/api/projects')
    const checkout = projects.find((p) => p.slug === 'checkout') as { id: string }
    const stored = async () =>
      (
        await adminApi<Array<{ slug: string; require_approval: boolean }>>(
          'GET',
          `/api/projects/${checkout.id}/environments`,
        )
      )
        .filter((e) => e.require_approval)
        .map((e) => e.slug)
    expect(await stored()).toEqual(['staging'])
    await screenshot(page, 'dashboard-05-environments')
    await approval.click()
    await expect.poll(stored, WITHIN).toEqual([])
  })

  it('creates a flag with variants (shares shown live) and a rule, in every environment', async () => {
    await page.getByRole('tab', { name: 'Flags' }).click()
    await expect.poll(() => page.locator('#live-status').getAttribute('data-state'), WITHIN).toBe('live')
    await page.getByRole('button', { name: 'New flag' }).click()
    const editor = page.getByRole('dialog', { name: 'New flag' })
    await editor.getByLabel('Key').fill('checkout-button')
    await editor.getByLabel('Type').selectOption('string')
    await editor.getByLabel('Description').fill('Button copy #checkout #beta')
    await editor.getByLabel('Default value (string)').fill('Buy')
    await editor.getByRole('button', { name: 'Add variant' }).click()
    await editor.getByRole('button', { name: 'Add variant' }).click()
    await editor.getByLabel('Value 1').fill('Buy now')
    await editor.getByLabel('Weight 1').fill('1')
    await editor.getByLabel('Value 2').fill('Order')
    await editor.getByLabel('Weight 2').fill('3')
    expect(await editor.getByLabel('Share of variant 1').textContent()).toBe('25 %')
    expect(await editor.getByLabel('Share of variant 2').textContent()).toBe('75 %')
    await editor.getByLabel('Weight 2').fill('0')
    expect(await editor.getByLabel('Share of variant 1').textContent()).toBe('100 %')
    await editor.getByLabel('Weight 1').fill('0')
    expect(await editor.getByRole('alert').textContent()).toContain('add up to 0')
    await editor.getByLabel('Weight 1').fill('1')
    await editor.getByLabel('Weight 2').fill('2')
    expect(await editor.getByLabel('Share of variant 1').textContent()).toBe('33.3 %')
    await editor.getByRole('button', { name: 'Add rule' }).click()
    await editor.getByLabel('Attribute', { exact: true }).fill('age')
    const operators = await editor.getByLabel('Operator').locator('option').allTextContents()
    expect(operators).toHaveLength(9)
    await editor.getByLabel('Operator').selectOption('greater_than_or_equal')
    await editor.getByLabel('Values (comma-separated)').fill('18')
    await editor.getByLabel('Serves', { exact: true }).fill('Order')
    await screenshot(page, 'dashboard-06-flag-editor', { fullPage: false })
    await editor.getByRole('button', { name: 'Create flag' }).click()
    await editor.waitFor({ state: 'detached' })

    const row = page.locator('tr[data-flag="checkout-button"]')
    await expect.poll(() => row.locator('td[data-enabled]').count(), WITHIN).toBe(3)
    const projects = await adminApi<Array<{ id: string; slug: string }>>('GET', '/api/projects')
    const checkout = projects.find((p) => p.slug === 'checkout') as { id: string }
    const envs = await adminApi<Array<{ id: string; slug: string }>>('GET', `/api/projects/${checkout.id}/environments`)
    for (const env of envs) {
      const flag = await adminApi<Record<string, unknown>>('GET', `/api/environments/${env.id}/flags/checkout-button`)
      expect(flag).toMatchObject({
        flag_type: 'string',
        default_value: 'Buy',
        is_enabled: false,
        variants: [
          { value: 'Buy now', weight: 1 },
          { value: 'Order', weight: 2 },
        ],
        rules: [{ attribute: 'age', operator: 'greater_than_or_equal', values: ['18'], variant: 'Order' }],
      })
    }
  })

  it('toggles the flag in two environments', async () => {
    for (const env of ['Production', 'Staging']) {
      const toggle = page.getByRole('switch', { name: `checkout-button in ${env}` })
      await toggle.click()
      await expect.poll(() => toggle.getAttribute('aria-checked'), WITHIN).toBe('true')
    }
    expect(
      await page.getByRole('switch', { name: 'checkout-button in Development' }).getAttribute('aria-checked'),
    ).toBe('false')
    const projects = await adminApi<Array<{ id: string; slug: string }>>('GET', '/api/projects')
    const checkout = projects.find((p) => p.slug === 'checkout') as { id: string }
    const envs = await adminApi<Array<{ id: string; slug: string }>>('GET', `/api/projects/${checkout.id}/environments`)
    const states: Record<string, boolean> = {}
    for (const env of envs) {
      states[env.slug] = (
        await adminApi<{ is_enabled: boolean }>('GET', `/api/environments/${env.id}/flags/checkout-button`)
      ).is_enabled
    }
    expect(states).toEqual({ production: true, staging: true, development: false })
    await screenshot(page, 'dashboard-07-flags-table')
  })

  it('shows a toggle made in a second browser context within a second', async () => {
    const second = await browser.newContext({ viewport: { width: 1280, height: 860 } })
    const other = await second.newPage()
    watchErrors(other, 'second', errors)
    await signInAsAdmin(other)
    await other.getByRole('link', { name: 'Checkout' }).click()
    await expect.poll(() => other.locator('#live-status').getAttribute('data-state'), WITHIN).toBe('live')
    const mine = page.getByRole('switch', { name: 'checkout-button in Development' })
    const theirs = other.getByRole('switch', { name: 'checkout-button in Development' })
    expect(await mine.getAttribute('aria-checked')).toBe('false')
    await theirs.click()
    const clickedAt = Date.now()
    await expect.poll(() => mine.getAttribute('aria-checked'), { timeout: 5_000, interval: 20 }).toBe('true')
    const elapsed = Date.now() - clickedAt
    expect(elapsed).toBeLessThan(1000)
    await screenshot(other, 'dashboard-08-second-context')
    await second.close()
  })

  it('explains a prerequisite cycle in words', async () => {
    await page.getByRole('button', { name: 'New flag' }).click()
    let editor = page.getByRole('dialog', { name: 'New flag' })
    await editor.getByLabel('Key').fill('new-cart')
    await editor.getByLabel('Create in').selectOption({ label: 'Production only' })
    await editor.getByRole('button', { name: 'Add prerequisite' }).click()
    await editor.getByLabel('Requires flag').selectOption('checkout-button')
    await editor.getByLabel('To serve (JSON; empty: on)').fill('"Order"')
    await editor.getByRole('button', { name: 'Create flag' }).click()
    await editor.waitFor({ state: 'detached' })
    const row = page.locator('tr[data-flag="new-cart"]')
    await expect.poll(() => row.locator('td[data-enabled]').count(), WITHIN).toBe(1)
    expect(await row.locator('td.absent').count()).toBe(2)

    await page.getByRole('button', { name: 'Edit checkout-button in Production' }).click()
    editor = page.getByRole('dialog', { name: 'checkout-button in Production' })
    await editor.getByRole('button', { name: 'Add prerequisite' }).click()
    await editor.getByLabel('Requires flag').selectOption('new-cart')
    await editor.getByRole('button', { name: 'Save' }).click()
    const error = editor.locator('#editor-error')
    await expect.poll(() => error.textContent(), WITHIN).toContain('go round in a circle')
    expect(await error.textContent()).toContain('“checkout-button” requires “new-cart”')
    await screenshot(page, 'dashboard-09-cycle', { fullPage: false })
    await editor.getByRole('button', { name: 'Cancel' }).click()
  })

  it('creates a flag in every environment or in none, naming where the key is taken', async () => {
    const projects = await adminApi<Array<{ id: string; slug: string }>>('GET', '/api/projects')
    const checkout = projects.find((p) => p.slug === 'checkout') as { id: string }
    const envs = await adminApi<Array<{ id: string; slug: string }>>('GET', `/api/projects/${checkout.id}/environments`)
    const staging = envs.find((e) => e.slug === 'staging') as { id: string }
    await adminApi('POST', `/api/environments/${staging.id}/flags`, { key: 'promo-banner', is_enabled: false })
    await page.getByRole('button', { name: 'New flag' }).click()
    const editor = page.getByRole('dialog', { name: 'New flag' })
    await editor.getByLabel('Key').fill('promo-banner')
    await editor.getByLabel('On', { exact: true }).check()
    await editor.getByRole('button', { name: 'Create flag' }).click()
    const error = editor.locator('#editor-error')
    await expect.poll(() => error.textContent(), WITHIN).toContain('promo-banner exists in Staging')
    const where: Record<string, boolean | undefined> = {}
    for (const env of envs) {
      const flags = await adminApi<Array<{ key: string; is_enabled: boolean }>>(
        'GET',
        `/api/environments/${env.id}/flags`,
      )
      where[env.slug] = flags.find((f) => f.key === 'promo-banner')?.is_enabled
    }
    // Nothing was created in Production or Development, and Staging's flag was not replaced.
    expect(where).toEqual({ production: undefined, staging: false, development: undefined })
    await editor.getByRole('button', { name: 'Cancel' }).click()
    // The filter test below counts the project's flags.
    await adminApi('DELETE', `/api/environments/${staging.id}/flags/promo-banner`)
    await expect.poll(() => page.locator('tr[data-flag="promo-banner"]').count(), WITHIN).toBe(0)
  })

  it('promotes a flag to another environment after showing the diff', async () => {
    await page.getByRole('button', { name: 'Edit new-cart in Production' }).click()
    const editor = page.getByRole('dialog', { name: 'new-cart in Production' })
    await editor.getByLabel('Promote to').selectOption({ label: 'Staging' })
    const diff = editor.getByRole('table', { name: 'What promoting changes in Staging' })
    await diff.waitFor()
    const rows = await diff.locator('tbody tr').allTextContents()
    expect(rows).toContain('is_enabled(not set)false')
    expect(rows).toContain('prerequisites(not set)[{"flag_key":"checkout-button","required_value":"Order"}]')
    await screenshot(page, 'dashboard-09b-promote-diff', { fullPage: false })
    await editor.getByRole('button', { name: 'Promote to Staging' }).click()
    await expect.poll(() => editor.getByRole('status').textContent(), WITHIN).toBe('Promoted to Staging.')
    await editor.getByRole('button', { name: 'Cancel' }).click()
    const row = page.locator('tr[data-flag="new-cart"]')
    await expect.poll(() => row.locator('td[data-enabled]').count(), WITHIN).toBe(2)
  })

  it('searches and filters by tag, type and state', async () => {
    const keys = () =>
      page.locator('tbody tr[data-flag]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-flag')))
    await expect.poll(keys, WITHIN).toEqual(['checkout-button', 'new-cart'])
    await page.getByRole('searchbox', { name: 'Search' }).fill('cart')
    await expect.poll(keys, WITHIN).toEqual(['new-cart'])
    await page.getByRole('searchbox', { name: 'Search' }).fill('')
    // Tags are the flag's own (the editor sets them for every environment); the filter offers those in use.
    await page.getByRole('button', { name: 'Edit checkout-button in Production' }).click()
    const editor = page.getByRole('dialog', { name: 'checkout-button in Production' })
    await editor.getByRole('textbox', { name: 'Tags', exact: true }).fill('checkout, beta')
    await editor.getByRole('button', { name: 'Set tags and owner' }).click()
    await editor.getByText('Tags and owner set for every environment.').waitFor()
    await editor.getByRole('button', { name: 'Cancel' }).click()
    await editor.waitFor({ state: 'hidden' })
    const tag = page.getByRole('combobox', { name: /^Tag\b/ })
    await expect.poll(() => tag.locator('option').allTextContents(), WITHIN).toEqual(['any', 'beta', 'checkout'])
    await tag.selectOption('beta')
    await expect.poll(keys, WITHIN).toEqual(['checkout-button'])
    await tag.selectOption('')
    await page.getByRole('combobox', { name: 'Type' }).selectOption('boolean')
    await expect.poll(keys, WITHIN).toEqual(['new-cart'])
    await page.getByRole('combobox', { name: 'Type' }).selectOption('all')
    await page.getByRole('combobox', { name: 'State' }).selectOption('on')
    await expect.poll(keys, WITHIN).toEqual(['checkout-button'])
    await page.getByRole('combobox', { name: 'State' }).selectOption('off')
    await expect.poll(keys, WITHIN).toEqual(['new-cart'])
    await page.getByRole('combobox', { name: 'State' }).selectOption('all')
  })

  it('has no serious or critical axe violations, works from the keyboard, and reads at 390 px', async () => {
    expect(await axeViolations(page)).toEqual([])
    await page.getByRole('tab', { name: 'Environments' }).click()
    await page.locator('ul.environments > li').first().waitFor()
    expect(await axeViolations(page)).toEqual([])
    await page.getByRole('tab', { name: 'Flags' }).click()
    await page.getByRole('button', { name: 'Edit checkout-button in Production' }).click()
    const editor = page.getByRole('dialog', { name: 'checkout-button in Production' })
    await editor.getByLabel('Value 1').waitFor()
    expect(await axeViolations(page)).toEqual([])
    // Keyboard only: Escape closes the dialog and focus returns to the button that opened it.
    await page.keyboard.press('Escape')
    await editor.waitFor({ state: 'detached' })
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe(
      'Edit checkout-button in Production',
    )
    // Tab from there reaches the next switch, and Space toggles it.
    await page.keyboard.press('Tab')
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe(
      'checkout-button in Staging',
    )
    await page.keyboard.press('Space')
    const staging = page.getByRole('switch', { name: 'checkout-button in Staging' })
    await expect.poll(() => staging.getAttribute('aria-checked'), WITHIN).toBe('false')
    await page.keyboard.press('Space')
    await expect.poll(() => staging.getAttribute('aria-checked'), WITHIN).toBe('true')

    await page.setViewportSize({ width: 390, height: 844 })
    await page.getByRole('switch', { name: 'checkout-button in Production' }).waitFor()
    // The page itself never scrolls sideways; only the flag table does, inside its own box.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await screenshot(page, 'dashboard-11-390px')
    expect(await axeViolations(page)).toEqual([])
    await page.setViewportSize({ width: 1280, height: 860 })
  })

  it('deletes a project after a confirmation naming what goes with it, then signs out', async () => {
    await page.getByRole('button', { name: 'Delete project' }).click()
    const confirm = page.getByRole('dialog', { name: 'Delete project Checkout?' })
    const text = await confirm.textContent()
    expect(text).toContain('3 environments (Production, Staging, Development)')
    expect(text).toContain('SDK keys')
    await screenshot(page, 'dashboard-10-delete-project', { fullPage: false })
    await confirm.getByRole('button', { name: 'Delete Checkout' }).click()
    await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor()
    expect((await adminApi<Array<{ slug: string }>>('GET', '/api/projects')).map((p) => p.slug)).toEqual(['default'])

    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('heading', { name: 'Sign in to Acme' }).waitFor()
    const me = await page.evaluate(() => fetch('/api/auth/me').then((r) => r.status))
    expect(me).toBe(401)
    expect(errors).toEqual([])
  })
})
