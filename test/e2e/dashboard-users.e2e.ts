/**
 * The environment order and users page: the admin reorders
 * environments from the keyboard (Move up / Move down), another signed-in
 * context sees its flag table's columns follow within a second (the stream's
 * environments event); the admin creates a user who then signs in; a viewer
 * sees the admin-only controls disabled with the reason. axe and 390 px on both
 * new pages. Dialogs are opened and closed along the way (new user, delete).
 */
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { axeViolations } from './axe.js'
import { launchChromium, newPage, screenshot } from './browser.js'
import { type ServiceHarness, startService } from './service-harness.js'
import { signIn } from './sign-in.js'

const ADMIN = { email: 'admin@example.com', password: 'users e2e password' }
const NEW_USER = { name: 'Nora New', email: 'nora@example.com', password: 'nora e2e password' }
const WITHIN = { timeout: 15_000, interval: 50 }
let service: ServiceHarness
let call: ServiceHarness['call']
let browser: Browser
let admin: Page
let watcher: Page
let projectId = ''
const errors: string[] = []

const columns = (p: Page) => p.locator('table.flags thead th[scope="col"]').allTextContents()
const envNames = (p: Page) => p.locator('ul.environments > li .env-name').allTextContents()

beforeAll(async () => {
  service = await startService({ prefix: 'flagsync-e2e-dashboard-users-', admin: ADMIN })
  call = service.call
  projectId = service.projectId
  browser = await launchChromium()
  admin = await newPage(browser, 'admin', errors, { timeoutMs: 10_000 })
  watcher = await newPage(browser, 'watcher', errors, { timeoutMs: 10_000 })
})

afterAll(async () => {
  await browser?.close()
  service?.close()
})

describe('environment order and users in the dashboard', () => {
  it('reorders environments from the keyboard; another context sees the columns follow within a second', async () => {
    // Each project page holds one stream (flags, reorders and people changes on the same connection, kept across
    // tabs and reorders): browsers allow six HTTP/1.1 connections per origin across all tabs. Pages without a
    // project hold `/stream?environment_id=` (people changes alone) instead, closed when a project opens.
    const streams = { admin: 0, watcher: 0 }
    const projectStream = (url: string) =>
      new URL(url).pathname === '/stream' && new URL(url).searchParams.get('environment_id') !== ''
    admin.on('request', (r) => void (projectStream(r.url()) && streams.admin++))
    watcher.on('request', (r) => void (projectStream(r.url()) && streams.watcher++))
    await signIn(watcher, service.url, ADMIN)
    await watcher.getByRole('link', { name: 'Default' }).click()
    await expect.poll(() => columns(watcher), WITHIN).toEqual(['Flag', 'Production', 'Staging', 'Development'])

    await signIn(admin, service.url, ADMIN)
    await admin.getByRole('link', { name: 'Default' }).click()
    await admin.getByRole('tab', { name: 'Environments' }).click()
    await expect.poll(() => envNames(admin), WITHIN).toEqual(['Production', 'Staging', 'Development'])
    expect(await admin.getByRole('button', { name: 'Move Production up' }).isDisabled()).toBe(true)
    expect(await admin.getByRole('button', { name: 'Move Production up' }).getAttribute('title')).toBe('already first')

    // Keyboard only: focus the button, press Enter; focus stays on it as its row moves.
    await admin.getByRole('button', { name: 'Move Development up' }).focus()
    const sent = Date.now()
    await admin.keyboard.press('Enter')
    await expect.poll(() => envNames(admin), WITHIN).toEqual(['Production', 'Development', 'Staging'])
    await expect
      .poll(() => columns(watcher), { timeout: 1000, interval: 20 })
      .toEqual(['Flag', 'Production', 'Development', 'Staging'])
    expect(Date.now() - sent).toBeLessThan(1500)
    await expect
      .poll(() => admin.evaluate(() => document.activeElement?.getAttribute('aria-label')), WITHIN)
      .toBe('Move Development up')
    await admin.keyboard.press('Enter')
    await expect.poll(() => envNames(admin), WITHIN).toEqual(['Development', 'Production', 'Staging'])
    // Now first: its Up is disabled, so the keyboard lands on its Down.
    await expect
      .poll(() => admin.evaluate(() => document.activeElement?.getAttribute('aria-label')), WITHIN)
      .toBe('Move Development down')
    await expect.poll(() => columns(watcher), WITHIN).toEqual(['Flag', 'Development', 'Production', 'Staging'])
    const listed = await call<Array<{ slug: string }>>('GET', `/api/projects/${projectId}/environments`)
    expect(listed.body.map((e) => e.slug)).toEqual(['development', 'production', 'staging'])
    expect(streams).toEqual({ admin: 1, watcher: 1 })
    await screenshot(admin, 'dashboard-users-01-environments-reordered')
    await screenshot(watcher, 'dashboard-users-02-columns-followed')
    // A reload keeps the service's order.
    await admin.reload()
    await expect.poll(() => envNames(admin), WITHIN).toEqual(['Development', 'Production', 'Staging'])
    expect(await axeViolations(admin)).toEqual([])
  })

  it('lets the admin create a user who then signs in; the new user cannot manage users', async () => {
    await admin.getByRole('link', { name: 'Users' }).click()
    await admin.getByRole('heading', { name: 'Users', level: 1 }).waitFor()
    await expect.poll(() => admin.locator('tr[data-user]').count(), WITHIN).toBe(1)
    expect(await admin.getByRole('button', { name: `Delete user ${ADMIN.email}` }).getAttribute('title')).toBe(
      'you cannot delete yourself',
    )
    expect(await axeViolations(admin)).toEqual([])

    await admin.getByRole('button', { name: 'New user' }).click()
    const dialog = admin.getByRole('dialog', { name: 'New user' })
    await dialog.getByLabel('Name').fill(NEW_USER.name)
    await dialog.getByLabel('Email').fill(ADMIN.email) // taken: the service's 409 is shown, the dialog stays
    await dialog.getByLabel('Workspace role').selectOption('viewer')
    await dialog.getByLabel('Password').fill(NEW_USER.password)
    await dialog.getByRole('button', { name: 'Create user' }).click()
    await expect.poll(() => dialog.getByRole('alert').textContent(), WITHIN).toContain('is in use')
    expect(await axeViolations(admin)).toEqual([])
    await screenshot(admin, 'dashboard-users-03-new-user-409')
    await dialog.getByLabel('Email').fill(NEW_USER.email)
    await dialog.getByRole('button', { name: 'Create user' }).click()
    await dialog.waitFor({ state: 'detached' })
    await expect.poll(() => admin.getByLabel(`Workspace role of ${NEW_USER.email}`).inputValue(), WITHIN).toBe('viewer')
    // Focus went back to the button that opened the dialog.
    expect(await admin.evaluate(() => document.activeElement?.textContent)).toBe('New user')
    await screenshot(admin, 'dashboard-users-04-user-created')

    await watcher.getByRole('button', { name: 'Sign out' }).click()
    await watcher.getByLabel('Email').fill(NEW_USER.email)
    await watcher.getByLabel('Password').fill(NEW_USER.password)
    await watcher.getByRole('button', { name: 'Sign in' }).click()
    await expect.poll(() => watcher.locator('.who').textContent(), WITHIN).toBe(`${NEW_USER.name} (viewer)`)
    await watcher.getByRole('link', { name: 'Users' }).click()
    await expect.poll(() => watcher.locator('tr[data-user]').count(), WITHIN).toBe(2)
    const create = watcher.getByRole('button', { name: 'New user' })
    expect(await create.isDisabled()).toBe(true)
    expect(await create.getAttribute('title')).toBe('needs the workspace admin role')
    expect(await watcher.getByText('Creating and deleting users needs the workspace admin role.').count()).toBe(1)
    expect(await watcher.getByRole('button', { name: `Delete user ${ADMIN.email}` }).isDisabled()).toBe(true)
    await screenshot(watcher, 'dashboard-users-05-viewer-sees-why')
  })

  it('deletes the user after a confirmation; Escape on the confirmation keeps them', async () => {
    await admin.getByRole('button', { name: `Delete user ${NEW_USER.email}` }).click()
    const confirm = admin.getByRole('dialog', { name: `Delete user ${NEW_USER.email}?` })
    await confirm.waitFor()
    expect(await confirm.textContent()).toContain('can no longer sign in')
    await admin.keyboard.press('Escape')
    await confirm.waitFor({ state: 'detached' })
    expect(await admin.locator(`tr[data-user="${NEW_USER.email}"]`).count()).toBe(1)
    await admin.getByRole('button', { name: `Delete user ${NEW_USER.email}` }).click()
    await confirm.getByRole('button', { name: 'Delete user' }).click()
    await expect.poll(() => admin.locator(`tr[data-user="${NEW_USER.email}"]`).count(), WITHIN).toBe(0)
    // Their session ended with them.
    expect((await call('GET', '/api/users')).status).toBe(200)
    await watcher.reload()
    await watcher.getByRole('button', { name: 'Sign in' }).waitFor()
  })

  it('shows the saved users offline, read-only, saying why', async () => {
    await admin.getByRole('link', { name: 'Users' }).click()
    await expect.poll(() => admin.locator('tr[data-user]').count(), WITHIN).toBe(1)
    await admin.evaluate(() => navigator.serviceWorker.ready.then(() => undefined))
    await expect.poll(() => admin.evaluate(() => navigator.serviceWorker.controller !== null), WITHIN).toBe(true)
    await admin.context().setOffline(true)
    try {
      await admin.reload()
      await expect.poll(() => admin.locator('#connection').getAttribute('data-state'), WITHIN).toBe('offline')
      await expect.poll(() => admin.locator('tr[data-user]').count(), WITHIN).toBe(1)
      const create = admin.getByRole('button', { name: 'New user' })
      expect(await create.isDisabled()).toBe(true)
      expect(await create.getAttribute('title')).toBe('needs the service (offline)')
      expect(await admin.getByText('Creating and deleting users needs the service (offline).').count()).toBe(1)
      await screenshot(admin, 'dashboard-users-08-offline')
    } finally {
      await admin.context().setOffline(false)
    }
    await admin.reload()
    await expect.poll(() => admin.locator('#connection').getAttribute('data-state'), WITHIN).toBe('online')
  })

  it('reads at 390 px without sideways scrolling, axe-clean, on both pages', async () => {
    await admin.setViewportSize({ width: 390, height: 844 })
    for (const open of [
      async () => admin.getByRole('link', { name: 'Users' }).click(),
      async () => {
        await admin.getByRole('link', { name: 'Default' }).click()
        await admin.getByRole('tab', { name: 'Environments' }).click()
        await admin.locator('ul.environments > li').first().waitFor()
      },
    ]) {
      await open()
      await admin.waitForTimeout(200)
      expect(await admin.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
      expect(await axeViolations(admin)).toEqual([])
    }
    await screenshot(admin, 'dashboard-users-06-environments-390px')
    await admin.getByRole('link', { name: 'Users' }).click()
    await screenshot(admin, 'dashboard-users-07-users-390px')
    expect(errors).toEqual([])
  })
})
