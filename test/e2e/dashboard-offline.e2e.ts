/**
 * The dashboard offline: the service worker serves the shell, the page shows
 * the projects and flags it saved; flag edits (switches, every field of the
 * editor, new flags) are queued in the environment's outbox (the sync client)
 * and survive a reload; back online they are delivered through the service's
 * `POST /api/environments/:id/sync`, the pending panel empties and a second
 * browser sees them. What cannot be queued (projects, keys, members, promote,
 * history) says it needs a connection.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { axeViolations } from './axe.js'
import { goOnline, launchChromium, newPage, reloadOffline, screenshot, watchErrors } from './browser.js'
import { type ServiceHarness, startService } from './service-harness.js'
import { signIn } from './sign-in.js'

const ADMIN = { email: 'admin@example.com', password: 'offline e2e pw' }
const WITHIN = { timeout: 15_000, interval: 50 }
let service: ServiceHarness
let call: ServiceHarness['call']
let browser: Browser
let context: BrowserContext
let page: Page
let production = ''
let projectId = ''
const errors: string[] = []

/** The admin signed in to the dashboard in a browser context of its own. */
async function signedInPage(label: string): Promise<Page> {
  const p = await newPage(browser, label, errors)
  await signIn(p, service.url, ADMIN)
  return p
}

/**
 * Takes the page offline and waits until the dashboard shows it, the offline hint above the table included: it
 * moves the rows down, and a click aimed at a row while that happens can land on the row above (seen in CI).
 */
async function goOffline(): Promise<void> {
  await context.setOffline(true)
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), WITHIN).toBe('offline')
  await page.locator('#offline-editing').waitFor()
}

beforeAll(async () => {
  service = await startService({ prefix: 'flagsync-e2e-dashboard-offline-', admin: ADMIN })
  call = service.call
  projectId = service.projectId
  production = service.environmentId('production')
  expect(
    (await call('POST', `/api/environments/${production}/flags`, { key: 'night-mode', is_enabled: false })).status,
  ).toBe(200)
  const segment = await call('POST', `/api/projects/${projectId}/segments`, {
    key: 'beta',
    name: 'Beta testers',
    rules: [{ attribute: 'plan', operator: 'equals', values: ['pro'] }],
  })
  expect(segment.status).toBe(200)
  expect(
    (
      await call('POST', `/api/environments/${production}/flags`, {
        key: 'checkout',
        rules: [{ segment_key: 'beta', variant: 'control' }],
        is_enabled: true,
        flag_type: 'string',
        default_value: 'control',
        variants: [{ value: 'control', weight: 1 }],
      })
    ).status,
  ).toBe(200)
  browser = await launchChromium()
  context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
  context.setDefaultTimeout(10_000)
  page = await context.newPage()
  watchErrors(page, 'page', errors)
})

afterAll(async () => {
  await browser?.close()
  service?.close()
})

const serverState = async () =>
  (await call<{ is_enabled: boolean }>('GET', `/api/environments/${production}/flags/night-mode`)).body.is_enabled

describe('the dashboard offline', () => {
  it('loads online and installs its service worker', async () => {
    await signIn(page, service.url, ADMIN)
    await page.getByRole('link', { name: 'Default' }).click()
    await expect.poll(() => page.locator('#live-status').getAttribute('data-state'), WITHIN).toBe('live')
    await page.evaluate(() => navigator.serviceWorker.ready.then(() => undefined))
    await expect.poll(() => page.evaluate(() => navigator.serviceWorker.controller !== null), WITHIN).toBe(true)
    await page.getByRole('switch', { name: 'night-mode in Production' }).waitFor()
  })

  it('queues a toggle offline, keeps it across a reload from the service worker, read-only elsewhere', async () => {
    await context.setOffline(true)
    await expect.poll(() => page.locator('#connection').getAttribute('data-state'), WITHIN).toBe('offline')
    const toggle = page.getByRole('switch', { name: 'night-mode in Production' })
    await toggle.click()
    await expect.poll(() => toggle.getAttribute('aria-checked'), WITHIN).toBe('true')
    const pending = page.locator('.pending-env[data-env="production"]')
    await expect.poll(() => pending.getAttribute('data-pending'), WITHIN).toBe('1')
    expect(await serverState()).toBe(false)

    await reloadOffline(page)
    await page.getByRole('heading', { name: 'Default', level: 1 }).waitFor()
    expect(await page.locator('#connection').getAttribute('data-state')).toBe('offline')
    await expect.poll(() => pending.getAttribute('data-pending'), WITHIN).toBe('1')
    await expect.poll(() => toggle.getAttribute('aria-checked'), WITHIN).toBe('true')
    // What cannot be queued says why.
    const newProject = page.getByRole('button', { name: 'New project' })
    expect(await newProject.isDisabled()).toBe(true)
    expect(await newProject.getAttribute('title')).toBe(
      'Creating a project needs the service: it cannot be queued offline',
    )
    // A new flag can be queued (the sync route takes inserts), so it stays usable.
    expect(await page.getByRole('button', { name: 'New flag' }).isDisabled()).toBe(false)
    await screenshot(page, 'dashboard-offline-01-queued')
    expect(await serverState()).toBe(false)
  })

  it('opens pages whose code it has not loaded yet, from the service worker, while offline', async () => {
    // Only the flags page is in the entry chunk: the other pages' chunks were never requested by this page, so
    // they come from what the worker precached at install (shell.json lists every chunk).
    const loaded = await page.evaluate(() => performance.getEntriesByType('resource').map((e) => e.name))
    expect(loaded.filter((name) => /\/assets\/(environments|users)-[\w-]+\.js$/.test(name))).toEqual([])
    await page.getByRole('tab', { name: 'Environments' }).click()
    await page.locator('ul.environments').getByText('Production').first().waitFor()
    await page.getByRole('link', { name: 'Users', exact: true }).click()
    await page.getByRole('heading', { name: 'Users', level: 1 }).waitFor()
    expect(await page.locator('#connection').getAttribute('data-state')).toBe('offline')
    await page.getByRole('link', { name: 'Default' }).click()
    await page.getByRole('switch', { name: 'night-mode in Production' }).waitFor()
    expect(errors).toEqual([])
  })

  it('delivers the queued toggle through the sync route once back online', async () => {
    await goOnline(context)
    await expect.poll(serverState, WITHIN).toBe(true)
    await expect.poll(() => page.locator('.pending-env').count(), WITHIN).toBe(0)
    await expect.poll(() => page.locator('#connection').getAttribute('data-state'), WITHIN).toBe('online')
    await expect.poll(() => page.locator('#live-status').getAttribute('data-state'), WITHIN).toBe('live')
    expect(await page.getByRole('switch', { name: 'night-mode in Production' }).getAttribute('aria-checked')).toBe(
      'true',
    )
    await screenshot(page, 'dashboard-offline-02-delivered')
  })

  it('shows a conflict with base, mine and theirs when the flag was deleted meanwhile, and takes theirs', async () => {
    await context.setOffline(true)
    await expect.poll(() => page.locator('#connection').getAttribute('data-state'), WITHIN).toBe('offline')
    const toggle = page.getByRole('switch', { name: 'night-mode in Production' })
    await toggle.click()
    await expect
      .poll(() => page.locator('.pending-env[data-env="production"]').getAttribute('data-pending'), WITHIN)
      .toBe('1')
    expect((await call('DELETE', `/api/environments/${production}/flags/night-mode`)).status).toBe(204)
    await goOnline(context)
    const card = page.getByRole('region', { name: 'Conflict on night-mode' })
    await card.waitFor({ timeout: 15_000 })
    expect(await card.locator('tbody tr').allTextContents()).toEqual(['is_enabledtruefalse(deleted)'])
    await screenshot(page, 'dashboard-offline-03-conflict')
    await card.getByRole('button', { name: 'Take theirs' }).click()
    await card.waitFor({ state: 'detached', timeout: 15_000 })
    await expect.poll(() => page.locator('.pending-env').count(), WITHIN).toBe(0)
    expect((await call('GET', `/api/environments/${production}/flags/night-mode`)).status).toBe(404)
    await expect.poll(() => page.locator('tr[data-flag="night-mode"]').count(), WITHIN).toBe(0)
    expect(errors).toEqual([])
  })
})

type ServerFlag = {
  is_enabled: boolean
  rollout_percentage: number | null
  variants: Array<{ value: unknown; weight: number }>
  rules: Array<Record<string, unknown>>
  description: string | null
}
const serverFlag = async (key: string) =>
  (await call<ServerFlag>('GET', `/api/environments/${production}/flags/${key}`)).body
const pendingProduction = () => page.locator('.pending-env[data-env="production"]')

describe('editing every field offline', () => {
  it('keeps an editable copy of the flags, segment references unexpanded, while online', async () => {
    await page.getByRole('switch', { name: 'checkout in Production' }).waitFor()
    await expect
      .poll(
        // The persisted query cache: only the REST copy has the rule as a segment reference (the stream expands it).
        () => page.evaluate(() => localStorage.getItem('flagsync.dashboard.cache') ?? ''),
        WITHIN,
      )
      .toContain('"segment_key":"beta"')
  })

  it('queues variants with weights, a rule and the rollout from the editor, as one update of those fields', async () => {
    await goOffline()
    // Dispatched on the button itself, not a click at its coordinates: rows can still move as the table re-renders.
    await page.getByRole('button', { name: 'Edit checkout in Production' }).dispatchEvent('click')
    const editor = page.getByRole('dialog', { name: 'checkout in Production' })
    await editor.getByText('Offline: your changes are queued').waitFor()
    // Promote and history cannot be queued: they say so instead of failing.
    expect(await editor.getByText('Promote and history need a connection').count()).toBe(1)
    expect(await editor.getByRole('button', { name: /^Promote to/ }).count()).toBe(0)
    expect(await editor.getByLabel('Value 1').inputValue()).toBe('control')
    await editor.getByRole('button', { name: 'Add variant' }).click()
    await editor.getByLabel('Value 2').fill('treatment')
    await editor.getByLabel('Weight 2').fill('3')
    expect(await editor.getByLabel('Share of variant 2').textContent()).toMatch(/^75\s?%$/)
    // The stream expands segments; the editor starts from the REST copy, so rule 1 is still the segment.
    const rule1 = editor.locator('[data-rule="0"]')
    expect(await rule1.getByLabel(/^Segment/).inputValue()).toBe('beta')
    await editor.getByRole('button', { name: 'Add rule' }).click()
    const rule2 = editor.locator('[data-rule="1"]')
    await rule2.getByLabel('Attribute', { exact: true }).fill('country')
    await rule2.getByLabel('Operator').selectOption('equals')
    await rule2.getByLabel('Values (comma-separated)').fill('NL, BE')
    await rule2.getByLabel('Serves', { exact: true }).fill('treatment')
    await editor.getByLabel('Rollout %').fill('60')
    await screenshot(page, 'dashboard-offline-04-editor', { fullPage: false })
    expect(await axeViolations(page)).toEqual([])
    await editor.getByRole('button', { name: 'Queue changes' }).click()
    await editor.waitFor({ state: 'detached' })

    await expect.poll(() => pendingProduction().getAttribute('data-pending'), WITHIN).toBe('1')
    const line = (await pendingProduction().locator('li').allTextContents()).join('\n')
    expect(line).toMatch(/^update checkout: /)
    // Only the edited fields: a merge with what others change meanwhile stays possible.
    expect(line.match(/(\w+) = /g)).toEqual(['rollout_percentage = ', 'variants = ', 'rules = '])
    const before = await serverFlag('checkout')
    expect(before.rollout_percentage).toBeNull()
    expect(before.variants).toHaveLength(1)
  })

  it('queues a new flag offline, keeps both across a reload from the service worker', async () => {
    await page.getByRole('button', { name: 'New flag' }).click()
    const editor = page.getByRole('dialog', { name: 'New flag' })
    await editor.getByLabel('Key').fill('offline-banner')
    await editor.getByLabel('Create in').selectOption({ label: 'Production only' })
    await editor.getByLabel('On', { exact: true }).check()
    await editor.getByRole('button', { name: 'Queue new flag' }).click()
    await editor.waitFor({ state: 'detached' })
    await expect.poll(() => pendingProduction().getAttribute('data-pending'), WITHIN).toBe('2')
    await page.getByRole('switch', { name: 'offline-banner in Production' }).waitFor()
    expect((await call('GET', `/api/environments/${production}/flags/offline-banner`)).status).toBe(404)

    await reloadOffline(page)
    await page.getByRole('heading', { name: 'Default', level: 1 }).waitFor()
    expect(await page.locator('#connection').getAttribute('data-state')).toBe('offline')
    await expect.poll(() => pendingProduction().getAttribute('data-pending'), WITHIN).toBe('2')
    expect(await pendingProduction().locator('li').allTextContents()).toEqual([
      expect.stringMatching(/^update checkout: /),
      'create offline-banner',
    ])
    // The editor opens from the saved copy with the queued edits on top.
    await page.getByRole('button', { name: 'Edit checkout in Production' }).click()
    const editor2 = page.getByRole('dialog', { name: 'checkout in Production' })
    expect(await editor2.getByLabel('Rollout %').inputValue()).toBe('60')
    expect(await editor2.getByLabel('Value 2').inputValue()).toBe('treatment')
    expect(await editor2.getByLabel('Values (comma-separated)').inputValue()).toBe('NL, BE')
    expect(
      await editor2
        .locator('[data-rule="0"]')
        .getByLabel(/^Segment/)
        .inputValue(),
    ).toBe('beta')
    await editor2.getByRole('button', { name: 'Cancel' }).click()
    await screenshot(page, 'dashboard-offline-05-reloaded')
    await page.setViewportSize({ width: 390, height: 844 })
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    expect(await axeViolations(page)).toEqual([])
    await screenshot(page, 'dashboard-offline-06-reloaded-390')
    await page.setViewportSize({ width: 1280, height: 860 })
  })

  it('delivers them once back online, and a second browser context sees them', async () => {
    await goOnline(context)
    await expect.poll(async () => (await serverFlag('checkout')).rollout_percentage, WITHIN).toBe(60)
    const after = await serverFlag('checkout')
    expect(after.variants).toEqual([
      { value: 'control', weight: 1 },
      { value: 'treatment', weight: 3 },
    ])
    expect(after.rules).toEqual([
      { segment_key: 'beta', variant: 'control' },
      { attribute: 'country', operator: 'equals', values: ['NL', 'BE'], variant: 'treatment' },
    ])
    expect((await serverFlag('offline-banner')).is_enabled).toBe(true)
    await expect.poll(() => page.locator('.pending-env').count(), WITHIN).toBe(0)
    await screenshot(page, 'dashboard-offline-07-delivered')

    const second = await signedInPage('second')
    try {
      await second.getByRole('link', { name: 'Default' }).click()
      await second.getByRole('switch', { name: 'offline-banner in Production' }).waitFor()
      expect(
        await second.getByRole('switch', { name: 'offline-banner in Production' }).getAttribute('aria-checked'),
      ).toBe('true')
      await second.getByRole('button', { name: 'Edit checkout in Production' }).click()
      const editor = second.getByRole('dialog', { name: 'checkout in Production' })
      await expect.poll(() => editor.getByLabel('Rollout %').inputValue(), WITHIN).toBe('60')
      expect(await editor.getByLabel('Value 2').inputValue()).toBe('treatment')
      expect(await editor.getByLabel('Attribute', { exact: true }).inputValue()).toBe('country')
      await screenshot(second, 'dashboard-offline-08-second-context', { fullPage: false })
    } finally {
      await second.context().close()
    }
  })

  it('shows base, mine and theirs when someone changed the same field meanwhile, and keeps mine', async () => {
    await goOffline()
    await page.getByRole('button', { name: 'Edit checkout in Production' }).dispatchEvent('click')
    const editor = page.getByRole('dialog', { name: 'checkout in Production' })
    await editor.getByLabel('Rollout %').fill('70')
    await editor.getByLabel('Description').fill('checkout #payments')
    await editor.getByRole('button', { name: 'Queue changes' }).click()
    await editor.waitFor({ state: 'detached' })
    await expect.poll(() => pendingProduction().getAttribute('data-pending'), WITHIN).toBe('1')
    // Someone else, online: the same field to another value, and a field this page did not touch.
    const theirs = await call('PATCH', `/api/environments/${production}/flags/checkout`, {
      rollout_percentage: 20,
      is_enabled: false,
    })
    expect(theirs.status).toBe(200)
    await goOnline(context)
    const card = page.getByRole('region', { name: 'Conflict on checkout' })
    await card.waitFor({ timeout: 15_000 })
    expect(await card.locator('tbody tr').allTextContents()).toEqual(['rollout_percentage607020'])
    await screenshot(page, 'dashboard-offline-09-field-conflict')
    expect((await serverFlag('checkout')).rollout_percentage).toBe(20)
    await card.getByRole('button', { name: 'Keep mine' }).click()
    await card.waitFor({ state: 'detached', timeout: 15_000 })
    await expect.poll(async () => (await serverFlag('checkout')).rollout_percentage, WITHIN).toBe(70)
    const merged = await serverFlag('checkout')
    expect(merged.description).toBe('checkout #payments')
    expect(merged.is_enabled).toBe(false)
    await expect.poll(() => page.locator('.pending-env').count(), WITHIN).toBe(0)
    expect(errors).toEqual([])
  })
})

describe('deleting a flag', () => {
  let envs: Array<{ id: string; slug: string; name: string }> = []
  const status = async (envId: string, key: string) =>
    (await call('GET', `/api/environments/${envId}/flags/${key}`)).status

  it('online: deletes it from every environment, and a second browser context sees it go within a second', async () => {
    envs = (await call<typeof envs>('GET', `/api/projects/${projectId}/environments`)).body
    expect(envs.length).toBeGreaterThan(1)
    for (const env of envs)
      expect(
        (await call('POST', `/api/environments/${env.id}/flags`, { key: 'old-banner', is_enabled: true })).status,
      ).toBe(200)
    const second = await signedInPage('second')
    try {
      await second.getByRole('link', { name: 'Default' }).click()
      await expect.poll(() => second.locator('#live-status').getAttribute('data-state'), WITHIN).toBe('live')
      const row = second.locator('tr[data-flag="old-banner"]')
      await row.waitFor()

      await page.getByRole('button', { name: 'Edit old-banner in Production' }).click()
      const editor = page.getByRole('dialog', { name: 'old-banner in Production' })
      await editor.getByRole('button', { name: 'Delete flag' }).click()
      const confirm = page.getByRole('dialog', { name: 'Delete old-banner?' })
      expect(await confirm.getByLabel('Delete from').inputValue()).toBe(production)
      await confirm.getByLabel('Delete from').selectOption('all')
      const names = envs.map((e) => e.name).join(', ')
      await confirm.getByText(`old-banner is deleted from ${names}:`).waitFor()
      await screenshot(page, 'dashboard-offline-10-delete-confirm', { fullPage: false })
      expect(await axeViolations(page)).toEqual([])
      await confirm.getByRole('button', { name: 'Delete flag' }).click()
      const clickedAt = Date.now()
      await row.waitFor({ state: 'detached', timeout: 5_000 })
      const elapsed = Date.now() - clickedAt
      expect(elapsed).toBeLessThan(1000)
      await confirm.waitFor({ state: 'detached' })
      await editor.waitFor({ state: 'detached' })
      expect(await page.locator('tr[data-flag="old-banner"]').count()).toBe(0)
      for (const env of envs) expect(await status(env.id, 'old-banner')).toBe(404)
      await screenshot(second, 'dashboard-offline-11-deleted-second-context', { fullPage: false })
    } finally {
      await second.context().close()
    }
  })

  it('offline: queues the delete, shows it pending, and delivers it on reconnect', async () => {
    expect(
      (await call('POST', `/api/environments/${production}/flags`, { key: 'gone-soon', is_enabled: true })).status,
    ).toBe(200)
    await page.getByRole('switch', { name: 'gone-soon in Production' }).waitFor()
    await goOffline()
    await page.getByRole('button', { name: 'Edit gone-soon in Production' }).dispatchEvent('click')
    const editor = page.getByRole('dialog', { name: 'gone-soon in Production' })
    await editor.getByRole('button', { name: 'Delete flag' }).click()
    const confirm = page.getByRole('dialog', { name: 'Delete gone-soon?' })
    await confirm.getByText('Offline: the delete is queued').waitFor()
    await confirm.getByText('gone-soon is deleted from Production:').waitFor()
    await confirm.getByRole('button', { name: 'Queue delete' }).click()
    await editor.waitFor({ state: 'detached' })
    await expect.poll(() => pendingProduction().getAttribute('data-pending'), WITHIN).toBe('1')
    expect(await pendingProduction().locator('li').allTextContents()).toEqual(['delete gone-soon'])
    await expect.poll(() => page.locator('tr[data-flag="gone-soon"]').count(), WITHIN).toBe(0)
    await screenshot(page, 'dashboard-offline-12-delete-queued')
    expect(await axeViolations(page)).toEqual([])
    expect(await status(production, 'gone-soon')).toBe(200)
    await goOnline(context)
    await expect.poll(() => status(production, 'gone-soon'), WITHIN).toBe(404)
    await expect.poll(() => page.locator('.pending-env').count(), WITHIN).toBe(0)
    expect(await page.locator('tr[data-flag="gone-soon"]').count()).toBe(0)
  })

  it('offline: a delete racing an edit made meanwhile is a conflict with base / mine / theirs, and can delete anyway', async () => {
    expect(
      (await call('POST', `/api/environments/${production}/flags`, { key: 'raced', is_enabled: true })).status,
    ).toBe(200)
    await page.getByRole('switch', { name: 'raced in Production' }).waitFor()
    await goOffline()
    await page.getByRole('button', { name: 'Edit raced in Production' }).dispatchEvent('click')
    await page.getByRole('dialog', { name: 'raced in Production' }).getByRole('button', { name: 'Delete flag' }).click()
    await page.getByRole('dialog', { name: 'Delete raced?' }).getByRole('button', { name: 'Queue delete' }).click()
    await expect.poll(() => pendingProduction().getAttribute('data-pending'), WITHIN).toBe('1')
    // Someone else turns it on meanwhile: deleting what they just changed must not happen unseen.
    expect((await call('PATCH', `/api/environments/${production}/flags/raced`, { is_enabled: false })).status).toBe(200)
    await goOnline(context)
    const card = page.getByRole('region', { name: 'Conflict on raced' })
    await card.waitFor({ timeout: 15_000 })
    expect(await card.locator('tbody tr').allTextContents()).toEqual(['is_enabledtrue(delete)false'])
    await screenshot(page, 'dashboard-offline-13-delete-conflict')
    expect(await status(production, 'raced')).toBe(200)
    await card.getByRole('button', { name: 'Delete anyway' }).click()
    await card.waitFor({ state: 'detached', timeout: 15_000 })
    await expect.poll(() => status(production, 'raced'), WITHIN).toBe(404)
    await expect.poll(() => page.locator('.pending-env').count(), WITHIN).toBe(0)
    expect(errors).toEqual([])
  })

  it('offline: a flag the stream showed before the saved copy had it can still be deleted from its editor', async () => {
    // The saved copy follows the stream with a REST read; going offline before that read answers leaves the
    // editor nothing to edit, and the delete must still be there. The read is refused to make that moment last.
    const list = `**/api/environments/${production}/flags`
    await page.route(list, (route) => route.abort())
    try {
      expect(
        (await call('POST', `/api/environments/${production}/flags`, { key: 'stream-only', is_enabled: true })).status,
      ).toBe(200)
      await page.getByRole('switch', { name: 'stream-only in Production' }).waitFor()
      await goOffline()
    } finally {
      await page.unroute(list)
    }
    await page.getByRole('button', { name: 'Edit stream-only in Production' }).dispatchEvent('click')
    const editor = page.getByRole('dialog', { name: 'stream-only in Production' })
    await editor.getByText('No saved copy of stream-only to edit offline').waitFor()
    await editor.getByRole('button', { name: 'Delete flag' }).click()
    await page
      .getByRole('dialog', { name: 'Delete stream-only?' })
      .getByRole('button', { name: 'Queue delete' })
      .click()
    await editor.waitFor({ state: 'detached' })
    await expect.poll(() => pendingProduction().getAttribute('data-pending'), WITHIN).toBe('1')
    expect(await pendingProduction().locator('li').allTextContents()).toEqual(['delete stream-only'])
    await goOnline(context)
    await expect.poll(() => status(production, 'stream-only'), WITHIN).toBe(404)
    await expect.poll(() => page.locator('.pending-env').count(), WITHIN).toBe(0)
    expect(errors).toEqual([])
  })
})
