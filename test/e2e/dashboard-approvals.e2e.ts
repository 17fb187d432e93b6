/**
 * The dashboard's change requests, SDK keys and members, as two users in two
 * browser contexts: an editor's save in an approval environment becomes a
 * request the editor cannot approve, the admin sees its diff and approves it;
 * the editor cancels another; the admin creates an SDK key (shown once) and
 * revokes it; the editor sees admin-only controls disabled with the reason.
 */
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { axeViolations } from './axe.js'
import { launchChromium, newPage, screenshot } from './browser.js'
import { type Credentials, type ServiceHarness, startService } from './service-harness.js'
import { signIn } from './sign-in.js'

const ADMIN = { email: 'admin@example.com', password: 'approvals e2e pw' }
const EDITOR = { email: 'ed@example.com', password: 'editor e2e pw', name: 'Ed' }
const WITHIN = { timeout: 15_000, interval: 50 }
let service: ServiceHarness
let browser: Browser
let admin: Page
let editor: Page
let call: ServiceHarness['call']
let projectId = ''
let production = ''
const errors: string[] = []

async function openDefault(p: Page, who: Credentials) {
  await signIn(p, service.url, who)
  await p.getByRole('link', { name: 'Default' }).click()
  await p.getByRole('heading', { name: 'Default', level: 1 }).waitFor()
}

beforeAll(async () => {
  service = await startService({ prefix: 'flagsync-e2e-dashboard-cr-', admin: ADMIN })
  call = service.call
  projectId = service.projectId
  production = service.environmentId('production')
  const user = await call<{ id: number }>('POST', '/api/users', { ...EDITOR, role: 'editor' })
  expect(user.status).toBe(200)
  expect(
    (await call('POST', `/api/projects/${projectId}/members`, { user_id: user.body.id, role: 'editor' })).status,
  ).toBe(200)
  expect(
    (await call('POST', `/api/environments/${production}/flags`, { key: 'banner', is_enabled: false })).status,
  ).toBe(200)
  expect(
    (
      await call('POST', `/api/projects/${projectId}/environments/${production}/require-approval`, {
        require_approval: true,
      })
    ).status,
  ).toBe(200)
  browser = await launchChromium()
  admin = await newPage(browser, 'admin', errors, { timeoutMs: 10_000 })
  editor = await newPage(browser, 'editor', errors, { timeoutMs: 10_000 })
})

afterAll(async () => {
  await browser?.close()
  service?.close()
})

describe('change requests, SDK keys and members in the dashboard', () => {
  it("turns the editor's toggle in an approval environment into a request the editor cannot approve", async () => {
    await openDefault(editor, EDITOR)
    await expect.poll(() => editor.locator('.role-badge').textContent(), WITHIN).toBe('your role: editor')
    await editor.getByRole('switch', { name: 'banner in Production' }).click()
    await expect
      .poll(() => editor.getByRole('alert').textContent(), WITHIN)
      .toMatch(/requires approval: change request #1/)
    expect(await editor.getByRole('switch', { name: 'banner in Production' }).getAttribute('aria-checked')).toBe(
      'false',
    )
    await editor.getByRole('tab', { name: 'Change requests' }).click()
    const request = editor.locator('li[data-request="1"]')
    await request.waitFor()
    expect(await request.locator('table.diff tbody tr').allTextContents()).toEqual(['is_enabledfalsetrue'])
    const approve = request.getByRole('button', { name: 'Approve' })
    expect(await approve.isDisabled()).toBe(true)
    expect(await approve.getAttribute('title')).toBe('you filed it: another editor reviews it')
    await screenshot(editor, 'dashboard-cr-01-editor-request')
  })

  it('shows the admin the diff; the approval reaches the table', async () => {
    await openDefault(admin, ADMIN)
    await admin.getByRole('tab', { name: 'Change requests' }).click()
    const request = admin.locator('li[data-request="1"]')
    await request.waitFor()
    expect(await request.locator('h3').textContent()).toContain('banner in Production')
    expect(await request.textContent()).toContain(`by ${EDITOR.email}`)
    await screenshot(admin, 'dashboard-cr-02-admin-review')
    await request.getByRole('button', { name: 'Approve' }).click()
    await request.waitFor({ state: 'detached' })
    const flag = await call<{ is_enabled: boolean }>('GET', `/api/environments/${production}/flags/banner`)
    expect(flag.body.is_enabled).toBe(true)
    await editor.getByRole('tab', { name: 'Flags' }).click()
    await expect
      .poll(() => editor.getByRole('switch', { name: 'banner in Production' }).getAttribute('aria-checked'), WITHIN)
      .toBe('true')
  })

  it('lets the requester cancel a request', async () => {
    await editor.getByRole('switch', { name: 'banner in Production' }).click()
    await expect.poll(() => editor.getByRole('alert').textContent(), WITHIN).toMatch(/change request #2/)
    await editor.getByRole('tab', { name: 'Change requests' }).click()
    const request = editor.locator('li[data-request="2"]')
    await request.getByRole('button', { name: 'Cancel request' }).click()
    await request.waitFor({ state: 'detached' })
    const cancelled = await call<Array<{ id: number; status: string }>>(
      'GET',
      `/api/environments/${production}/change-requests?status=cancelled`,
    )
    expect(cancelled.body.map((r) => r.id)).toEqual([2])
  })

  it("shows the project's history: who, when, what changed, from which change request", async () => {
    await admin.getByRole('tab', { name: 'History' }).click()
    const history = admin.getByRole('region', { name: 'Changes in Default' })
    const approved = history.locator('li[data-revision]').filter({ hasText: 'change request #1' })
    await approved.waitFor()
    const text = await approved.textContent()
    expect(text).toMatch(/approved change request #1 by Ed: turned banner on in Production/)
    expect(text).toContain('is_enabled: false → true')
    const created = history.locator('li[data-revision]').filter({ hasText: 'created banner' })
    expect(await created.textContent()).toContain('API POST /api/environments/:env_id/flags')
    await screenshot(admin, 'dashboard-history')
    expect(await axeViolations(admin)).toEqual([])
  })

  it('creates an SDK key shown once, and revokes it after a confirmation', async () => {
    await admin.getByRole('tab', { name: 'SDK keys' }).click()
    await admin.getByLabel('Key name').fill('ci')
    await admin.getByLabel('Environment').selectOption({ label: 'Staging' })
    await admin.getByRole('button', { name: 'Create key' }).click()
    const secret = admin.getByLabel('New SDK key')
    const key = await secret.inputValue()
    expect(key).toMatch(/^sk_live_/)
    await screenshot(admin, 'dashboard-keys-01-created')
    expect((await call('GET', '/api/projects', undefined, { bearer: key })).status).toBe(200)
    await admin.getByRole('button', { name: 'I have copied it' }).click()
    expect(await secret.count()).toBe(0)
    await admin.getByRole('button', { name: 'Revoke ci' }).click()
    const confirm = admin.getByRole('dialog', { name: 'Revoke ci?' })
    expect(await confirm.textContent()).toContain('get 401 from now on')
    await confirm.getByRole('button', { name: 'Revoke key' }).click()
    await admin.locator('tr[data-key="ci"]').waitFor({ state: 'detached' })
    expect((await call('GET', '/api/projects', undefined, { bearer: key })).status).toBe(401)
  })

  it('creates a client key with the Kind selector: pk_live_, listed as client, refused by the management API', async () => {
    await admin.getByRole('tab', { name: 'SDK keys' }).click()
    await admin.getByLabel('Key name').fill('web page')
    await admin.getByLabel('Kind').selectOption('client')
    await admin.getByRole('button', { name: 'Create key' }).click()
    const key = await admin.getByLabel('New SDK key').inputValue()
    expect(key).toMatch(/^pk_live_/)
    const refused = await call('GET', '/api/projects', undefined, { bearer: key })
    expect(refused.status).toBe(403)
    await admin.getByRole('button', { name: 'I have copied it' }).click()
    expect(await admin.locator('tr[data-key="web page"] td').nth(1).textContent()).toBe('client')
    // On a phone the keys and members lists scroll inside their own box; the page never scrolls sideways.
    await admin.setViewportSize({ width: 390, height: 844 })
    expect(await admin.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await admin.getByRole('tab', { name: 'Members' }).click()
    await admin.locator('tr[data-member]').first().waitFor()
    expect(await admin.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await screenshot(admin, 'dashboard-members-390')
    await admin.setViewportSize({ width: 1280, height: 860 })
    expect(errors).toEqual([])
  })

  it('shows members; admin-only controls are disabled for the editor with the reason', async () => {
    await admin.getByRole('tab', { name: 'Members' }).click()
    await admin.locator(`tr[data-member="${EDITOR.email}"]`).waitFor()
    await editor.getByRole('tab', { name: 'SDK keys' }).click()
    const create = editor.getByRole('button', { name: 'Create key' })
    expect(await create.isDisabled()).toBe(true)
    expect(await editor.getByText('Creating and revoking keys needs the project admin role.').count()).toBe(1)
    await editor.getByRole('tab', { name: 'Members' }).click()
    const role = editor.getByLabel(`Role of ${EDITOR.email}`)
    expect(await role.isDisabled()).toBe(true)
    expect(await role.getAttribute('title')).toBe('needs the project admin role')
    expect(await editor.getByRole('button', { name: 'Rename' }).isDisabled()).toBe(true)
    await screenshot(editor, 'dashboard-members-editor')
    expect(errors).toEqual([])
  })

  it('refuses an editor a delete in an approval environment with the reason; the admin deletes at once', async () => {
    expect(
      (await call('POST', `/api/environments/${production}/flags`, { key: 'retired', is_enabled: false })).status,
    ).toBe(200)
    await editor.getByRole('tab', { name: 'Flags' }).click()
    await editor.getByRole('button', { name: 'Edit retired in Production' }).click()
    const editorDialog = editor.getByRole('dialog', { name: 'retired in Production' })
    const refused = editorDialog.getByRole('button', { name: 'Delete flag' })
    expect(await refused.isDisabled()).toBe(true)
    const reason =
      'Production requires approval: deleting a flag there needs the project admin role (a change request cannot delete)'
    expect(await refused.getAttribute('title')).toBe(reason)
    expect(await editorDialog.getByText(`Deleting ${reason}.`).count()).toBe(1)
    await screenshot(editor, 'dashboard-cr-delete-refused', { fullPage: false })
    await editorDialog.getByRole('button', { name: 'Cancel' }).click()

    await admin.getByRole('tab', { name: 'Flags' }).click()
    await admin.getByRole('button', { name: 'Edit retired in Production' }).click()
    await admin
      .getByRole('dialog', { name: 'retired in Production' })
      .getByRole('button', { name: 'Delete flag' })
      .click()
    const confirm = admin.getByRole('dialog', { name: 'Delete retired?' })
    await confirm.getByText('Production requires approval, but a change request cannot delete').waitFor()
    expect(await axeViolations(admin)).toEqual([])
    await confirm.getByRole('button', { name: 'Delete flag' }).click()
    await confirm.waitFor({ state: 'detached' })
    expect((await call('GET', `/api/environments/${production}/flags/retired`)).status).toBe(404)
    await editor.locator('tr[data-flag="retired"]').waitFor({ state: 'detached', timeout: 5_000 })
    expect(errors).toEqual([])
  })
})

describe('impressions in the dashboard', () => {
  it('charts evaluations over time per served value, with totals and the latest impressions filtered', async () => {
    const created = await call<{ key: string }>('POST', `/api/projects/${projectId}/keys`, {
      name: 'app',
      environment_id: production,
    })
    const now = Date.now()
    // 40 evaluations over the last 80 minutes: 'true' for even users, 'false' for odd, every 2 minutes.
    const batch = Array.from({ length: 40 }, (_, i) => ({
      flag_key: 'banner',
      user_id: `user-${i % 8}`,
      value: i % 2 === 0 ? 'true' : 'false',
      context: { plan: i % 3 === 0 ? 'pro' : 'free' },
      evaluated_at: new Date(now - (40 - i) * 2 * 60_000).toISOString(),
    }))
    const ingest = await call('POST', `/api/environments/${production}/impressions`, batch, {
      bearer: created.body.key,
    })
    expect(ingest.status).toBe(204)

    await admin.getByRole('tab', { name: 'Impressions' }).click()
    await expect.poll(() => admin.locator('dd[data-total="total"]').textContent(), WITHIN).toBe('40')
    expect(await admin.locator('dd[data-total="users"]').textContent()).toBe('8')
    const chart = admin.getByRole('img', {
      name: /^Evaluations of banner per 5 min, by served value: false 20, true 20$/,
    })
    await chart.waitFor()
    expect(await chart.locator('canvas').count()).toBe(1)
    expect(await chart.locator('.u-legend .u-series').allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining('false'), expect.stringContaining('true')]),
    )
    const rows = admin.locator('table.impressions tbody tr')
    await expect.poll(() => rows.count(), WITHIN).toBe(20)
    expect(await admin.getByText('40 matching').count()).toBe(1)
    await admin.getByRole('textbox', { name: 'User id' }).fill('user-3')
    await expect.poll(() => rows.count(), WITHIN).toBe(5)
    expect(await rows.locator('td:nth-child(3)').allTextContents()).toEqual(Array(5).fill('false'))
    await admin.getByRole('textbox', { name: 'Served value' }).fill('true')
    await expect.poll(() => admin.getByText('0 matching').count(), WITHIN).toBe(1)
    await admin.getByRole('textbox', { name: 'User id' }).fill('')
    await expect.poll(() => rows.count(), WITHIN).toBe(20)
    await screenshot(admin, 'dashboard-impressions')
    expect(await axeViolations(admin)).toEqual([])
    expect(errors).toEqual([])
  })
})

describe('personal access tokens in the dashboard', () => {
  it('creates a token shown once that acts as its user, and deletes it', async () => {
    await editor.getByRole('link', { name: 'Tokens' }).click()
    await editor.getByRole('heading', { name: 'Personal access tokens' }).waitFor()
    await editor.getByLabel('Token name').fill('laptop')
    await editor.getByRole('button', { name: 'Create token' }).click()
    const token = await editor.getByLabel('New token').inputValue()
    expect(token).toMatch(/^pat_/)
    const me = await call<{ email: string }>('GET', '/api/auth/me', undefined, { bearer: token })
    expect(me).toEqual({ status: 200, body: expect.objectContaining({ email: EDITOR.email }) })
    await screenshot(editor, 'dashboard-tokens')
    await editor.getByRole('button', { name: 'I have copied it' }).click()
    expect(await editor.locator('tr[data-token="laptop"] td').nth(2).textContent()).toBe('read_only')
    await editor.getByRole('button', { name: 'Delete token laptop' }).click()
    await editor
      .getByRole('dialog', { name: 'Delete token laptop?' })
      .getByRole('button', { name: 'Delete token' })
      .click()
    await editor.locator('tr[data-token="laptop"]').waitFor({ state: 'detached' })
    expect((await call('GET', '/api/auth/me', undefined, { bearer: token })).status).toBe(401)
    expect(await axeViolations(editor)).toEqual([])
    expect(errors).toEqual([])
  })
})

const longValues = Array.from({ length: 12 }, (_, i) => `@team-${i}.subsidiary.example.com`)

describe('a conflicting approval in the dashboard', () => {
  it('shows when requested / now / requested for the refused approval, and approves anyway on request', async () => {
    expect(
      (
        await call('POST', `/api/environments/${production}/flags`, {
          key: 'rollout',
          is_enabled: true,
          rollout_percentage: 10,
        })
      ).status,
    ).toBe(200)
    const filed = await call<{ id: number }>(
      'PATCH',
      `/api/environments/${production}/flags/rollout`,
      // Long JSON in the diff: the tables must wrap it, not widen the page.
      { rollout_percentage: 50, rules: [{ attribute: 'email', operator: 'ends_with', values: longValues }] },
      { cookie: await service.login({ email: EDITOR.email, password: EDITOR.password }) },
    )
    expect(filed.status).toBe(202)
    // After the request was filed, the admin (who may replace flags in an approval environment) sets the same field.
    const replaced = await call('POST', `/api/environments/${production}/flags`, {
      key: 'rollout',
      is_enabled: true,
      rollout_percentage: 30,
    })
    expect(replaced.status).toBe(200)

    await admin.getByRole('tab', { name: 'Flags' }).click()
    await admin.getByRole('tab', { name: 'Change requests' }).click()
    const request = admin.locator(`li[data-request="${filed.body.id}"]`)
    await request.waitFor()
    await request.getByRole('button', { name: 'Approve' }).click()
    const panel = request.getByRole('region', { name: `Conflict of request ${filed.body.id}` })
    await panel.waitFor()
    expect(await panel.getByRole('alert').textContent()).toContain('rollout_percentage also changed')
    expect(await panel.locator('tbody tr').allTextContents()).toEqual(['rollout_percentage103050'])
    const viewport = admin.viewportSize()?.width ?? 0
    expect(await admin.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport)
    await screenshot(admin, 'dashboard-cr-conflict')
    expect(await axeViolations(admin)).toEqual([])
    // The flag is untouched until the reviewer decides.
    expect(
      (await call<{ rollout_percentage: number }>('GET', `/api/environments/${production}/flags/rollout`)).body
        .rollout_percentage,
    ).toBe(30)
    await panel.getByRole('button', { name: 'Approve anyway' }).click()
    await request.waitFor({ state: 'detached' })
    expect(
      (await call<{ rollout_percentage: number }>('GET', `/api/environments/${production}/flags/rollout`)).body
        .rollout_percentage,
    ).toBe(50)
    // The refused approval's 409 is the one console error this test makes.
    expect(errors.filter((e) => !/409/.test(e))).toEqual([])
    errors.splice(0)
  })
})
