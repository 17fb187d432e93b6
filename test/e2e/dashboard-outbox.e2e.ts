/**
 * Online, every flag edit of the dashboard goes through the environment's
 * outbox (the sync client) and is delivered at once, and the editor still
 * says what the service decided: an edit in an approval environment names
 * its change request and leaves nothing queued; an edit on a stale base is a
 * conflict the editor names and the pending panel shows with base / mine /
 * theirs; an edit the service refuses (422) is explained in the editor and
 * discarded from the outbox, so the next save goes through.
 */
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, newPage, screenshot } from './browser.js'
import { type ServiceHarness, startService } from './service-harness.js'
import { signIn } from './sign-in.js'

const ADMIN = { email: 'admin@example.com', password: 'outbox e2e pw' }
const EDITOR = { email: 'ed@example.com', password: 'editor e2e pw', name: 'Ed' }
const WITHIN = { timeout: 15_000, interval: 50 }
let service: ServiceHarness
let browser: Browser
let page: Page
let call: ServiceHarness['call']
let production = ''
let development = ''
const errors: string[] = []

const flagIn = async (envId: string, key: string) =>
  (await call<Record<string, unknown>>('GET', `/api/environments/${envId}/flags/${key}`)).body

beforeAll(async () => {
  service = await startService({ prefix: 'flagsync-e2e-dashboard-outbox-', admin: ADMIN })
  call = service.call
  production = service.environmentId('production')
  development = service.environmentId('development')
  const user = await call<{ id: number }>('POST', '/api/users', { ...EDITOR, role: 'editor' })
  expect(user.status).toBe(200)
  const members = `/api/projects/${service.projectId}/members`
  expect((await call('POST', members, { user_id: user.body.id, role: 'editor' })).status).toBe(200)
  for (const [envId, flag] of [
    [production, { key: 'banner', is_enabled: false }],
    [development, { key: 'checkout', is_enabled: true, rollout_percentage: 10 }],
    [development, { key: 'cart', is_enabled: true }],
    [development, { key: 'pay', is_enabled: true, prerequisites: [{ flag_key: 'cart' }] }],
  ] as const)
    expect((await call('POST', `/api/environments/${envId}/flags`, flag)).status).toBe(200)
  const approval = `/api/projects/${service.projectId}/environments/${production}/require-approval`
  expect((await call('POST', approval, { require_approval: true })).status).toBe(200)
  browser = await launchChromium()
  page = await newPage(browser, 'editor', errors, { timeoutMs: 10_000 })
  await signIn(page, service.url, EDITOR)
  await page.getByRole('link', { name: 'Default' }).click()
  await page.locator('#live-status[data-state="live"]').waitFor({ timeout: 15_000 })
})

afterAll(async () => {
  await browser?.close()
  service?.close()
})

const editorOf = async (key: string, envName: string) => {
  await page.getByRole('button', { name: `Edit ${key} in ${envName}` }).click()
  const editor = page.getByRole('dialog', { name: `${key} in ${envName}` })
  await editor.getByLabel('Description').waitFor()
  return editor
}

describe('online flag edits through the outbox', () => {
  it('an edit in an approval environment says "change request #N", and nothing stays queued', async () => {
    const editor = await editorOf('banner', 'Production')
    await editor.getByLabel('Description').fill('spring sale')
    await editor.getByRole('button', { name: 'Request change' }).click()
    await expect
      .poll(() => editor.getByRole('status').textContent(), WITHIN)
      .toMatch(/Production requires approval: change request #1 is waiting for a reviewer/)
    const requests = await call<Array<{ id: number; flag_key: string }>>(
      'GET',
      `/api/environments/${production}/change-requests`,
    )
    expect(requests.body.map((r) => [r.id, r.flag_key])).toEqual([[1, 'banner']])
    expect((await flagIn(production, 'banner')).description).toBeNull()
    expect(await page.locator('.pending-env').count()).toBe(0)
    await screenshot(page, 'dashboard-outbox-01-change-request', { fullPage: false })
    await editor.getByRole('button', { name: 'Cancel' }).click()
  })

  it('an edit on a stale base is a conflict, named in the editor and shown in the pending panel', async () => {
    const editor = await editorOf('checkout', 'Development')
    // Someone else changes the same field after the editor read the flag.
    expect(
      (await call('PATCH', `/api/environments/${development}/flags/checkout`, { rollout_percentage: 20 })).status,
    ).toBe(200)
    await editor.getByLabel('Rollout %').fill('70')
    await editor.getByRole('button', { name: 'Save' }).click()
    await expect
      .poll(() => editor.locator('#editor-error').textContent(), WITHIN)
      .toMatch(/^checkout changed since you opened it: .*Queued edits/)
    const card = page.getByRole('region', { name: 'Conflict on checkout' })
    await card.waitFor()
    expect(await card.locator('tbody tr').allTextContents()).toEqual(['rollout_percentage107020'])
    expect((await flagIn(development, 'checkout')).rollout_percentage).toBe(20)
    await screenshot(page, 'dashboard-outbox-02-conflict', { fullPage: false })
    await editor.getByRole('button', { name: 'Cancel' }).click()
    await card.getByRole('button', { name: 'Take theirs' }).click()
    await expect.poll(() => page.locator('.pending-env').count(), WITHIN).toBe(0)
  })

  it('a refused edit (422) is explained in the editor and discarded, so the next save goes through', async () => {
    const editor = await editorOf('cart', 'Development')
    await editor.getByRole('button', { name: 'Add prerequisite' }).click()
    await editor.getByLabel('Requires flag').selectOption('pay')
    await editor.getByRole('button', { name: 'Save' }).click()
    const error = editor.locator('#editor-error')
    await expect.poll(() => error.textContent(), WITHIN).toContain('go round in a circle')
    expect(await error.textContent()).toContain('“cart” requires “pay” and “pay” requires “cart”')
    await screenshot(page, 'dashboard-outbox-03-refused', { fullPage: false })
    // Nothing is left in the outbox to block what comes next.
    expect(await page.locator('.pending-env').count()).toBe(0)
    expect((await flagIn(development, 'cart')).prerequisites).toEqual([])
    await editor.getByRole('button', { name: 'Remove prerequisite 1' }).click()
    await editor.getByLabel('Description').fill('the cart')
    await editor.getByRole('button', { name: 'Save' }).click()
    await editor.waitFor({ state: 'detached' })
    await expect.poll(async () => (await flagIn(development, 'cart')).description, WITHIN).toBe('the cart')
    expect(await page.locator('.pending-env').count()).toBe(0)
    expect(errors).toEqual([])
  })
})
