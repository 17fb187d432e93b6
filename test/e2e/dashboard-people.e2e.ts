/**
 * People management with two people in two browser contexts (and Bob's second session in a third): Alice, the
 * only admin, is refused demoting herself; she promotes Bob, whose open Users page shows the admin controls without
 * a reload; she resets Bob's password, and his open project page lands on the sign-in page at once, saying why;
 * Bob changes his own password on the account page from the keyboard, and his other session ends the same way.
 * The people activity lists all of it. axe and 390 px on the new pages.
 */
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { axeViolations } from './axe.js'
import { launchChromium, newPage, screenshot } from './browser.js'
import { type ServiceHarness, startService } from './service-harness.js'
import { signIn } from './sign-in.js'

const ALICE = { email: 'alice@example.com', password: 'alice e2e password' }
const BOB = { name: 'Bob Builder', email: 'bob@example.com', password: 'bob e2e password' }
const BOB_RESET = 'reset by alice 1'
const BOB_OWN = 'chosen by bob 22'
const WITHIN = { timeout: 15_000, interval: 50 }
/** "At once": the service re-checks streams within a second of a revocation; the page reacts on the event. */
const AT_ONCE = { timeout: 3_000, interval: 25 }
let service: ServiceHarness
let browser: Browser
let alice: Page
let bob: Page
let bobElsewhere: Page
let bobId = 0
let aliceFirstName = ''
const errors: string[] = []

/** Presses Tab until the focused element's text or label is `name`; false when 25 presses do not get there. */
async function tabTo(p: Page, name: string): Promise<boolean> {
  for (let i = 0; i < 25; i++) {
    await p.keyboard.press('Tab')
    const focused = await p.evaluate(() => {
      const el = document.activeElement as HTMLInputElement | null
      return (el?.labels?.[0]?.textContent ?? el?.textContent ?? '').trim()
    })
    if (focused === name) return true
  }
  return false
}

/** Replaces the focused field's text, as a keyboard user would (select all, type). */
async function retype(p: Page, text: string) {
  await p.keyboard.press('Control+A')
  await p.keyboard.type(text)
}

/** A mark on the page's window: still there later means the page was never reloaded. */
const mark = (p: Page) => p.evaluate(() => Object.assign(window, { peopleMark: 'unreloaded' }))
const marked = (p: Page) => p.evaluate(() => (window as { peopleMark?: string }).peopleMark ?? 'reloaded')
const activity = (p: Page) => p.locator('ol.people-activity li .sentence').allTextContents()

beforeAll(async () => {
  service = await startService({ prefix: 'flagsync-e2e-dashboard-people-', admin: { ...ALICE } })
  aliceFirstName = (await service.call<{ name: string }>('GET', '/api/auth/me')).body.name
  const created = await service.call<{ id: number }>('POST', '/api/users', { ...BOB, role: 'editor' })
  bobId = created.body.id
  browser = await launchChromium()
  alice = await newPage(browser, 'alice', errors, { timeoutMs: 10_000 })
  bob = await newPage(browser, 'bob', errors, { timeoutMs: 10_000 })
  bobElsewhere = await newPage(browser, 'bob-elsewhere', errors, { timeoutMs: 10_000 })
})

afterAll(async () => {
  await browser?.close()
  service?.close()
})

describe('people pages with two people', () => {
  it('renames Alice, then refuses demoting her, the last admin, with the service’s words', async () => {
    await signIn(alice, service.url, ALICE)
    await alice.getByRole('link', { name: 'Users' }).click()
    await alice.getByRole('button', { name: `Rename ${ALICE.email}` }).click()
    const rename = alice.getByRole('dialog', { name: `Rename ${ALICE.email}` })
    await rename.getByLabel('Name').fill('Alice Admin')
    await rename.getByRole('button', { name: 'Save name' }).click()
    await rename.waitFor({ state: 'detached' })
    await expect.poll(() => alice.locator('.who').textContent(), AT_ONCE).toBe('Alice Admin (admin)')
    const own = alice.getByLabel(`Workspace role of ${ALICE.email}`)
    await own.selectOption('editor')
    await expect
      .poll(() => alice.getByRole('alert').textContent(), WITHIN)
      .toBe('cannot demote the last admin: make another user admin first (conflict)')
    expect(await own.inputValue()).toBe('admin')
    expect(await axeViolations(alice)).toEqual([])
    await screenshot(alice, 'dashboard-people-01-last-admin-refused')
  })

  it('promotes Bob: his open Users page shows the admin controls without a reload', async () => {
    await signIn(bob, service.url, BOB)
    await bob.getByRole('link', { name: 'Users' }).click()
    await expect.poll(() => bob.locator('tr[data-user]').count(), WITHIN).toBe(2)
    expect(await bob.getByLabel(`Workspace role of ${BOB.email}`).count()).toBe(0)
    expect(await bob.getByRole('button', { name: 'New user' }).isDisabled()).toBe(true)
    await mark(bob)

    await alice.getByLabel(`Workspace role of ${BOB.email}`).selectOption('admin')
    await expect.poll(() => alice.getByRole('status').last().textContent(), WITHIN).toBe('Bob Builder is now admin.')
    await expect.poll(() => bob.locator('.who').textContent(), AT_ONCE).toBe('Bob Builder (admin)')
    await expect.poll(() => bob.getByLabel(`Workspace role of ${ALICE.email}`).count(), AT_ONCE).toBe(1)
    expect(await bob.getByRole('button', { name: 'New user' }).isDisabled()).toBe(false)
    await bob.getByRole('heading', { name: 'People activity' }).waitFor()
    expect(await marked(bob)).toBe('unreloaded')
    await screenshot(bob, 'dashboard-people-02-bob-promoted-live')
  })

  it("resets Bob's password: his open project page goes to sign-in at once, saying why", async () => {
    await bob.getByRole('link', { name: 'Default' }).click()
    await bob.locator('table.flags').waitFor()
    await mark(bob)

    await alice.getByRole('button', { name: `Reset password for ${BOB.email}` }).click()
    const dialog = alice.getByRole('dialog', { name: `Reset password for ${BOB.email}` })
    expect(await dialog.textContent()).toContain('is signed out everywhere at once')
    await dialog.getByLabel('New password', { exact: true }).fill(BOB_RESET)
    await dialog.getByLabel('Confirm new password').fill(`${BOB_RESET}x`)
    expect(await dialog.getByRole('button', { name: 'Reset password' }).isDisabled()).toBe(true)
    expect(await axeViolations(alice)).toEqual([])
    await screenshot(alice, 'dashboard-people-03-reset-dialog', { fullPage: false })
    await dialog.getByLabel('Confirm new password').fill(BOB_RESET)
    const sent = Date.now()
    await dialog.getByRole('button', { name: 'Reset password' }).click()
    await dialog.waitFor({ state: 'detached' })

    await bob.getByRole('button', { name: 'Sign in' }).waitFor({ timeout: AT_ONCE.timeout })
    expect(Date.now() - sent).toBeLessThan(AT_ONCE.timeout)
    expect(await bob.locator('#session-ended').textContent()).toBe(
      'A workspace admin reset your password. Sign in with the new one.',
    )
    expect(await marked(bob)).toBe('unreloaded')
    expect(await axeViolations(bob)).toEqual([])
    await screenshot(bob, 'dashboard-people-04-bob-signed-out-why')

    // The old password no longer signs in; the new one does.
    await bob.getByLabel('Email').fill(BOB.email)
    await bob.getByLabel('Password').fill(BOB.password)
    await bob.getByRole('button', { name: 'Sign in' }).click()
    await expect.poll(() => bob.locator('#login-error').textContent(), WITHIN).toContain('Wrong email or password')
    await bob.getByLabel('Password').fill(BOB_RESET)
    await bob.getByRole('button', { name: 'Sign in' }).click()
    await bob.getByRole('button', { name: 'Sign out' }).waitFor()
    expect(await bob.locator('#session-ended').count()).toBe(0)
  })

  it('Bob changes his own password from the keyboard: his other session ends at once, this one stays', async () => {
    await signIn(bobElsewhere, service.url, { email: BOB.email, password: BOB_RESET })
    await bob.goto(service.url)
    await bob.getByRole('button', { name: 'Sign out' }).waitFor()
    // Keyboard only: Tab through the header to the Account link, then into the form; Enter submits it.
    expect(await tabTo(bob, 'Account')).toBe(true)
    await bob.keyboard.press('Enter')
    await bob.getByRole('heading', { name: 'Your account', level: 1 }).waitFor()
    expect(await tabTo(bob, 'Current password')).toBe(true)
    await bob.keyboard.type('not my password')
    await bob.keyboard.press('Tab')
    await bob.keyboard.type(BOB_OWN)
    await bob.keyboard.press('Tab')
    await bob.keyboard.type(BOB_OWN)
    await bob.keyboard.press('Enter')
    await expect
      .poll(() => bob.getByRole('alert').textContent(), WITHIN)
      .toBe('The current password is wrong. 4 attempts left before sign-in is locked for 15 minutes.')
    await screenshot(bob, 'dashboard-people-05-wrong-current-password')

    // Focus stayed in the form (on the confirmation): back to the current password.
    await bob.keyboard.press('Shift+Tab')
    await bob.keyboard.press('Shift+Tab')
    await retype(bob, BOB_RESET)
    await bob.keyboard.press('Tab')
    await retype(bob, BOB_OWN)
    await bob.keyboard.press('Tab')
    await retype(bob, BOB_OWN)
    await bob.keyboard.press('Enter')
    await expect.poll(() => bob.getByRole('status').last().textContent(), WITHIN).toContain('Password changed')

    await bobElsewhere.getByRole('button', { name: 'Sign in' }).waitFor({ timeout: AT_ONCE.timeout })
    expect(await bobElsewhere.locator('#session-ended').textContent()).toBe(
      'Your password was changed in another session. Sign in again.',
    )
    await bob.waitForTimeout(500)
    expect(await bob.getByRole('button', { name: 'Sign out' }).count()).toBe(1)
    expect((await service.login({ email: BOB.email, password: BOB_OWN })).length).toBeGreaterThan(0)
    expect(await axeViolations(bob)).toEqual([])
  })

  it('lists these changes in the people activity, newest first, as they happen', async () => {
    await expect
      .poll(() => activity(alice), WITHIN)
      .toEqual([
        'Bob Builder changed their own password (1 other session ended)',
        'Alice Admin reset Bob Builder’s password (1 session ended, 0 tokens revoked)',
        'Alice Admin changed Bob Builder’s role from editor to admin',
        `Alice Admin renamed ${aliceFirstName} to Alice Admin`,
        'Alice Admin added Bob Builder (bob@example.com) as editor',
      ])
    const bobRow = (await service.call<Array<{ id: number; role: string }>>('GET', '/api/users')).body
    expect(bobRow.find((u) => u.id === bobId)?.role).toBe('admin')
    await screenshot(alice, 'dashboard-people-06-activity')
  })

  it("adds and deletes Carol: Bob's open Users page follows, the activity names her after she is gone", async () => {
    await bob.goto(`${service.url}/users`)
    await expect.poll(() => bob.locator('tr[data-user]').count(), WITHIN).toBe(2)
    await mark(bob)
    await alice.getByRole('button', { name: 'New user' }).click()
    const create = alice.getByRole('dialog', { name: 'New user' })
    await create.getByLabel('Name').fill('Carol Chen')
    await create.getByLabel('Email').fill('carol@example.com')
    await create.getByLabel('Password').fill('carol e2e password')
    await create.getByRole('button', { name: 'Create user' }).click()
    await expect.poll(() => bob.locator('tr[data-user]').count(), AT_ONCE).toBe(3)
    await alice.getByRole('button', { name: 'Delete user carol@example.com' }).click()
    await alice.getByRole('dialog').getByRole('button', { name: 'Delete user' }).click()
    await expect.poll(() => bob.locator('tr[data-user]').count(), AT_ONCE).toBe(2)
    expect(await marked(bob)).toBe('unreloaded')
    await expect
      .poll(async () => (await activity(alice)).slice(0, 2), WITHIN)
      .toEqual([
        'Alice Admin deleted Carol Chen (carol@example.com)',
        'Alice Admin added Carol Chen (carol@example.com) as viewer',
      ])
  })

  it('reads at 390 px without sideways scrolling, axe-clean', async () => {
    for (const [page, path, name] of [
      [alice, '/users', 'dashboard-people-07-users-390px'],
      [bob, '/account', 'dashboard-people-08-account-390px'],
    ] as const) {
      await page.setViewportSize({ width: 390, height: 844 })
      await page.goto(`${service.url}${path}`)
      await page.getByRole('heading', { level: 1 }).waitFor()
      await page.waitForTimeout(200)
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
      expect(await axeViolations(page)).toEqual([])
      await screenshot(page, name)
    }
    await bobElsewhere.setViewportSize({ width: 390, height: 844 })
    await screenshot(bobElsewhere, 'dashboard-people-09-ended-390px')
    expect(await bobElsewhere.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    expect(errors).toEqual([])
  })
})
