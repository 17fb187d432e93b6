/**
 * The flag console in Chromium against `npm start` (the real server process on
 * a random port, serving the built console at /). Page A and page B are in
 * separate browser contexts, so only A goes offline and each has its own
 * IndexedDB. The steps build on each other and run in order.
 */

import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { tempDir } from '@flagsync/test-support/temp-dir'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { goOnline, launchChromium, reloadOffline, screenshot, watchErrors } from './browser.js'

interface Flag {
  key: string
  is_enabled: boolean
  rollout_percentage: number | null
  description: string | null
  rules: Array<{ attribute: string; operator: string; values: string[] }>
}

const SEED: Flag[] = [
  {
    key: 'dark-mode',
    is_enabled: false,
    rollout_percentage: null,
    description: 'Dark colour scheme for the dashboard',
    rules: [],
  },
  {
    key: 'legacy-banner',
    is_enabled: true,
    rollout_percentage: null,
    description: 'Old announcement bar, being retired',
    rules: [],
  },
  {
    key: 'new-checkout',
    is_enabled: true,
    rollout_percentage: 25,
    description: 'The redesigned checkout flow',
    rules: [{ attribute: 'country', operator: 'equals', values: ['NL', 'BE'] }],
  },
  {
    key: 'search-v2',
    is_enabled: true,
    rollout_percentage: null,
    description: 'Typo-tolerant search',
    rules: [{ attribute: 'email', operator: 'ends_with', values: ['@acme.com'] }],
  },
]

/** How long a condition may take: delivery, a stream reconnect (≤ 6.5 s in the console) and rendering. */
const WITHIN = { timeout: 20_000, interval: 100 }

const dir = tempDir('flagsync-e2e-console-')
let server: SpawnedServer
let browser: Awaited<ReturnType<typeof launchChromium>>
let contextA: BrowserContext
let contextB: BrowserContext
let pageA: Page
let pageB: Page
const pageErrors: string[] = []

async function api(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
}

/** The API adds a read-only `revision` to every flag: checked here, compared apart from the flag's own fields. */
function withoutRevision({ revision, ...flag }: Flag & { revision?: unknown }): Flag {
  expect(Number.isInteger(revision) && (revision as number) > 0, `revision of ${flag.key}`).toBe(true)
  return flag
}

async function serverFlags(): Promise<Flag[]> {
  const res = await api('GET', '/api/flags')
  expect(res.status).toBe(200)
  return ((await res.json()) as Flag[]).map(withoutRevision).sort((a, b) => a.key.localeCompare(b.key))
}

async function serverFlag(key: string): Promise<Flag | null> {
  const res = await api('GET', `/api/flags/${key}`)
  if (res.status === 404) return null
  expect(res.status).toBe(200)
  return withoutRevision((await res.json()) as Flag)
}

const row = (page: Page, key: string): Locator => page.locator(`li.flag[data-key="${key}"]`)
const flagSwitch = (page: Page, key: string): Locator => page.getByRole('switch', { name: key, exact: true })
const pill = (page: Page): Locator => page.locator('#sync-status')
const keysOn = (page: Page): Promise<string[]> =>
  page.locator('li.flag').evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.key ?? ''))
const pillState = (page: Page) =>
  pill(page).evaluate((el) => ({
    state: (el as HTMLElement).dataset.state,
    pending: Number((el as HTMLElement).dataset.pending),
    text: el.textContent ?? '',
  }))
const pendingItems = (page: Page): Promise<string[]> => page.locator('#pending-list .pending-op').allTextContents()
const streamState = (page: Page) => page.locator('#stream-status').getAttribute('data-state')

async function openConsole(context: BrowserContext, label: string): Promise<Page> {
  const page = await context.newPage()
  watchErrors(page, label, pageErrors)
  await page.goto(server.url)
  await expect.poll(() => keysOn(page), WITHIN).toEqual(SEED.map((f) => f.key))
  await expect.poll(() => streamState(page), WITHIN).toBe('live')
  await expect.poll(() => pillState(page), WITHIN).toMatchObject({ state: 'idle', pending: 0 })
  // The service worker has cached the shell and controls the page: it may now go offline.
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null, undefined, { timeout: 20_000 })
  // Survives only as long as the page is not reloaded.
  await page.evaluate(() => {
    ;(window as unknown as { e2eMarker: string }).e2eMarker = 'not reloaded'
  })
  return page
}

const notReloaded = (page: Page) => page.evaluate(() => (window as unknown as { e2eMarker?: string }).e2eMarker)

beforeAll(async () => {
  server = await spawnServer('packages/flat-api/dist/cli.js', {
    DATABASE_URL: `sqlite:${dir.file('flags.sqlite')}`,
    POLL_INTERVAL_MS: '200',
  })
  for (const flag of SEED) expect((await api('POST', '/api/flags', flag)).status).toBe(200)
  browser = await launchChromium()
  contextA = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  contextB = await browser.newContext({ viewport: { width: 1280, height: 800 } })
})

afterAll(async () => {
  await browser?.close()
  server?.kill()
  dir.remove()
})

describe('the flag console in Chromium', () => {
  it('0. opens on two pages: the flags of the server, live, all synced, the shell cached by the service worker', async () => {
    pageA = await openConsole(contextA, 'A')
    pageB = await openConsole(contextB, 'B')
    expect(await pillState(pageA)).toEqual({ state: 'idle', pending: 0, text: 'All changes synced' })
    expect(await flagSwitch(pageA, 'new-checkout').getAttribute('aria-checked')).toBe('true')
    expect(await row(pageA, 'new-checkout').locator('.rollout-text').textContent()).toBe('25% of users')
    expect(await row(pageA, 'new-checkout').locator('.rule-chip').textContent()).toBe('country is one of NL, BE')
    await screenshot(pageA, '00-a-loaded')
  })

  it('1. offline, A creates a flag and toggles another: A shows both at once with a pending count; the server and B do not have them', async () => {
    await contextA.setOffline(true)
    await expect.poll(() => pillState(pageA), WITHIN).toMatchObject({ state: 'offline', pending: 0 })

    // Create through the dialog, with the keyboard only.
    await pageA.getByRole('button', { name: 'New flag' }).click()
    const dialog = pageA.getByRole('dialog', { name: 'New flag' })
    await dialog.getByLabel('Key').fill('beta-banner')
    await dialog.getByLabel('Description').fill('Announce the beta programme on the dashboard')
    await dialog.getByLabel('Rollout').fill('40')
    await dialog.getByLabel('Turn on right away').check()
    await screenshot(pageA, '01-a-create-dialog', { fullPage: false })
    await dialog.getByLabel('Key').press('Enter')
    await dialog.waitFor({ state: 'detached', timeout: 5000 })

    // Toggle with the keyboard: focus the switch, press Space.
    await flagSwitch(pageA, 'dark-mode').focus()
    await pageA.keyboard.press('Space')

    await expect.poll(() => keysOn(pageA), WITHIN).toContain('beta-banner')
    expect(await flagSwitch(pageA, 'beta-banner').getAttribute('aria-checked')).toBe('true')
    await expect.poll(() => flagSwitch(pageA, 'dark-mode').getAttribute('aria-checked'), WITHIN).toBe('true')
    expect(await row(pageA, 'beta-banner').locator('.rollout-text').textContent()).toBe('40% of users')
    await expect
      .poll(() => pillState(pageA), WITHIN)
      .toEqual({
        state: 'offline',
        pending: 2,
        text: 'Offline — 2 pending',
      })
    expect(await pendingItems(pageA)).toEqual(['Create “beta-banner”', 'Turn on “dark-mode”'])
    for (const key of ['beta-banner', 'dark-mode']) {
      expect(await row(pageA, key).locator('.badge-pending').isVisible()).toBe(true)
    }
    await screenshot(pageA, '01-a-offline-edits')

    // Neither the server nor B has them.
    expect(await serverFlag('beta-banner')).toBeNull()
    expect((await serverFlag('dark-mode'))?.is_enabled).toBe(false)
    expect(await keysOn(pageB)).toEqual(SEED.map((f) => f.key))
    expect(await flagSwitch(pageB, 'dark-mode').getAttribute('aria-checked')).toBe('false')
    expect(await pillState(pageB)).toMatchObject({ state: 'idle', pending: 0 })
    await screenshot(pageB, '01-b-unchanged')
  })

  it('2. A reloads while offline: the cached shell loads and the queued edits are still there', async () => {
    await reloadOffline(pageA, { waitUntil: 'load' })
    expect(await notReloaded(pageA)).toBeUndefined() // it really is a fresh page
    expect(await pageA.evaluate(() => navigator.onLine)).toBe(false)
    expect(await pageA.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true)

    await expect.poll(() => keysOn(pageA), WITHIN).toEqual([...SEED.map((f) => f.key), 'beta-banner'].sort())
    expect(await flagSwitch(pageA, 'beta-banner').getAttribute('aria-checked')).toBe('true')
    expect(await flagSwitch(pageA, 'dark-mode').getAttribute('aria-checked')).toBe('true')
    await expect
      .poll(() => pillState(pageA), WITHIN)
      .toEqual({
        state: 'offline',
        pending: 2,
        text: 'Offline — 2 pending',
      })
    expect(await pendingItems(pageA)).toEqual(['Create “beta-banner”', 'Turn on “dark-mode”'])
    expect(await streamState(pageA)).toBe('offline')
    await screenshot(pageA, '02-a-offline-reload')
    await pageA.evaluate(() => {
      ;(window as unknown as { e2eMarker: string }).e2eMarker = 'not reloaded'
    })
  })

  it('3. A goes online: the server gets exactly those changes, B shows them over the stream, A is back to 0 pending', async () => {
    await goOnline(contextA)

    const expected: Flag[] = [
      {
        key: 'beta-banner',
        is_enabled: true,
        rollout_percentage: 40,
        description: 'Announce the beta programme on the dashboard',
        rules: [],
      },
      ...SEED.map((f) => (f.key === 'dark-mode' ? { ...f, is_enabled: true } : f)),
    ].sort((a, b) => a.key.localeCompare(b.key))
    await expect.poll(() => serverFlags(), WITHIN).toEqual(expected)

    await expect.poll(() => keysOn(pageB), WITHIN).toEqual(expected.map((f) => f.key))
    await expect.poll(() => flagSwitch(pageB, 'dark-mode').getAttribute('aria-checked'), WITHIN).toBe('true')
    expect(await flagSwitch(pageB, 'beta-banner').getAttribute('aria-checked')).toBe('true')
    expect(await notReloaded(pageB)).toBe('not reloaded')

    await expect
      .poll(() => pillState(pageA), WITHIN)
      .toEqual({
        state: 'idle',
        pending: 0,
        text: 'All changes synced',
      })
    expect(await pendingItems(pageA)).toEqual([])
    expect(await row(pageA, 'beta-banner').locator('.badge-pending').isVisible()).toBe(false)
    await expect.poll(() => streamState(pageA), WITHIN).toBe('live')
    await screenshot(pageA, '03-a-synced')
    await screenshot(pageB, '03-b-received')
  })

  it('4. a change made through the REST API appears on both pages without a reload', async () => {
    const patch = await api('PATCH', '/api/flags/new-checkout', {
      rollout_percentage: 60,
      description: 'The redesigned checkout flow, now for most users',
    })
    expect(patch.status).toBe(200)
    const created = await api('POST', '/api/flags', {
      key: 'holiday-theme',
      is_enabled: true,
      description: 'Seasonal colours from 1 December',
      rules: [{ attribute: 'plan', operator: 'not_equals', values: ['enterprise'] }],
    })
    expect(created.status).toBe(200)

    for (const page of [pageA, pageB]) {
      await expect
        .poll(() => row(page, 'new-checkout').locator('.rollout-text').textContent(), WITHIN)
        .toBe('60% of users')
      expect(await row(page, 'new-checkout').locator('.flag-desc').textContent()).toBe(
        'The redesigned checkout flow, now for most users',
      )
      await expect.poll(() => keysOn(page), WITHIN).toContain('holiday-theme')
      expect(await row(page, 'holiday-theme').locator('.rule-chip').textContent()).toBe('plan is not enterprise')
      expect(await notReloaded(page)).toBe('not reloaded')
      expect(await pillState(page)).toMatchObject({ state: 'idle', pending: 0 })
    }
    await screenshot(pageA, '04-a-api-change')
    await screenshot(pageB, '04-b-api-change')
  })

  it("5. a conflict: A edits X offline, B deletes X; A's other edit goes through, X waits as a conflict until A drops its change", async () => {
    await contextA.setOffline(true)
    await expect.poll(() => pillState(pageA), WITHIN).toMatchObject({ state: 'offline' })

    // An edit that will be fine, then the edit of X (legacy-banner) that B is about to delete.
    await flagSwitch(pageA, 'search-v2').click()
    const x = row(pageA, 'legacy-banner')
    await x.getByRole('button', { name: 'Edit legacy-banner' }).click()
    const editor = x.getByRole('form', { name: 'Edit legacy-banner' })
    await editor.getByLabel('Description').fill('Keep the old bar for one more week')
    await editor.getByLabel('Rollout', { exact: true }).fill('50')
    await screenshot(pageA, '05-a-editing-offline')
    await editor.getByRole('button', { name: 'Save changes' }).click()
    await editor.waitFor({ state: 'detached', timeout: 5000 })
    await expect.poll(() => pillState(pageA), WITHIN).toMatchObject({ state: 'offline', pending: 2 })
    expect(await pendingItems(pageA)).toEqual(['Turn off “search-v2”', 'Edit rollout, description of “legacy-banner”'])

    // B deletes X, through its own page and outbox.
    await row(pageB, 'legacy-banner').getByRole('button', { name: 'Delete legacy-banner' }).click()
    const confirm = pageB.getByRole('dialog', { name: 'Delete “legacy-banner”?' })
    await screenshot(pageB, '05-b-confirm-delete', { fullPage: false })
    await confirm.getByRole('button', { name: 'Delete flag' }).click()
    await expect.poll(() => serverFlag('legacy-banner'), WITHIN).toBeNull()
    await expect.poll(() => keysOn(pageB), WITHIN).not.toContain('legacy-banner')
    await expect.poll(() => pillState(pageB), WITHIN).toMatchObject({ state: 'idle', pending: 0 })

    // The edit carries the revision A saw, so the receiver answers with a conflict (kind deleted) instead
    // of a 422 that blocks everything behind it: A's other edit goes through, the conflict waits for A's decision.
    await contextA.setOffline(false)
    await expect.poll(() => serverFlag('search-v2').then((f) => f?.is_enabled), WITHIN).toBe(false)
    await expect.poll(() => pillState(pageA), WITHIN).toMatchObject({ state: 'idle', pending: 0 })
    const card = pageA.locator('#conflicts .conflict[data-key="legacy-banner"]')
    await card.waitFor({ timeout: 20_000 })
    expect(await card.getAttribute('data-kind')).toBe('deleted')
    await expect.poll(() => card.locator('.conflict-head').textContent(), WITHIN).toMatch(/deleted “legacy-banner”/)
    expect(await pageA.getByRole('alert').filter({ hasText: 'Sync is blocked' }).count()).toBe(0)
    expect(await serverFlag('legacy-banner')).toBeNull()
    await screenshot(pageA, '05-a-conflict-deleted')

    await card.getByRole('button', { name: 'Drop my changes' }).click()
    await card.waitFor({ state: 'detached', timeout: 20_000 })
    await expect
      .poll(() => pillState(pageA), WITHIN)
      .toEqual({
        state: 'idle',
        pending: 0,
        text: 'All changes synced',
      })
    await expect.poll(() => flagSwitch(pageB, 'search-v2').getAttribute('aria-checked'), WITHIN).toBe('false')
    expect(await serverFlag('legacy-banner')).toBeNull()
    for (const page of [pageA, pageB]) {
      await expect
        .poll(() => keysOn(page), WITHIN)
        .toEqual(['beta-banner', 'dark-mode', 'holiday-theme', 'new-checkout', 'search-v2'])
    }
    await screenshot(pageA, '06-a-discarded-and-synced')
    await screenshot(pageB, '06-b-final')
    expect(pageErrors).toEqual([])
  })
})
