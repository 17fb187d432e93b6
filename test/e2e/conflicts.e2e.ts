/**
 * Conflicts in the flag console, in Chromium against `npm start`'s server: two editors (Ann and Bob,
 * each a browser context with its own IndexedDB and a name given once) edit the same flag offline and come back
 * online in both orders. Each conflict is resolved one way through the UI, then the server's flag and its audit
 * trail (`/api/flags/:key/history`) are checked. The steps build on each other and run in order.
 */

import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { tempDir } from '@flagsync/test-support/temp-dir'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, screenshot, watchErrors } from './browser.js'

const WITHIN = { timeout: 20_000, interval: 100 }
const SEED = [
  { key: 'checkout', is_enabled: true, rollout_percentage: 25, description: 'The new checkout' },
  { key: 'promo', is_enabled: false, rollout_percentage: null, description: 'Winter promotion' },
  { key: 'search', is_enabled: true, rollout_percentage: null, description: 'Search v2' },
]

interface HistoryEntry {
  revision: number
  action: string
  changedFields: string[]
  declaredActor: { name: string } | null
  after: Record<string, unknown> | null
}

const dir = tempDir('flagsync-e2e-conflicts-')
let server: SpawnedServer
let browser: Awaited<ReturnType<typeof launchChromium>>
const contexts: Record<'ann' | 'bob', BrowserContext> = {} as never
const pages: Record<'ann' | 'bob', Page> = {} as never
const pageErrors: string[] = []

async function api(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
}
async function serverFlag(key: string): Promise<Record<string, unknown> | null> {
  const res = await api('GET', `/api/flags/${key}`)
  return res.status === 404 ? null : ((await res.json()) as Record<string, unknown>)
}
async function history(key: string): Promise<HistoryEntry[]> {
  return ((await (await api('GET', `/api/flags/${key}/history`)).json()) as { entries: HistoryEntry[] }).entries
}
/** Who made each change, newest first, with what changed. */
async function authors(key: string): Promise<string[]> {
  return (await history(key)).map((e) => `${e.declaredActor?.name ?? 'api'} ${e.action} ${e.changedFields.join(',')}`)
}

const row = (page: Page, key: string): Locator => page.locator(`li.flag[data-key="${key}"]`)
const card = (page: Page, key: string): Locator => page.locator(`#conflicts .conflict[data-key="${key}"]`)
const pillState = (page: Page) =>
  page.locator('#sync-status').evaluate((el) => ({
    state: (el as HTMLElement).dataset.state,
    pending: Number((el as HTMLElement).dataset.pending),
  }))

async function open(who: 'ann' | 'bob', name: string): Promise<void> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  // The name asked once and kept in this browser.
  await context.addInitScript((n) => localStorage.setItem('flagsync.console.editorName', n), name)
  const page = await context.newPage()
  watchErrors(page, name, pageErrors)
  await page.goto(server.url)
  await expect.poll(() => page.locator('li.flag').count(), WITHIN).toBe(SEED.length)
  await expect.poll(() => page.locator('#stream-status').getAttribute('data-state'), WITHIN).toBe('live')
  contexts[who] = context
  pages[who] = page
}

async function offline(...who: Array<'ann' | 'bob'>): Promise<void> {
  for (const w of who) {
    await contexts[w].setOffline(true)
    await expect.poll(() => pillState(pages[w]), WITHIN).toMatchObject({ state: 'offline' })
  }
}

/** Back online; waits until everything it queued was delivered (or moved aside as a conflict). */
async function online(who: 'ann' | 'bob'): Promise<void> {
  await contexts[who].setOffline(false)
  await expect.poll(() => pillState(pages[who]), WITHIN).toMatchObject({ state: 'idle', pending: 0 })
}

async function edit(who: 'ann' | 'bob', key: string, fields: { rollout?: string; description?: string }) {
  const page = pages[who]
  await row(page, key)
    .getByRole('button', { name: `Edit ${key}` })
    .click()
  const form = row(page, key).getByRole('form', { name: `Edit ${key}` })
  if (fields.rollout !== undefined) await form.getByLabel('Rollout', { exact: true }).fill(fields.rollout)
  if (fields.description !== undefined) await form.getByLabel('Description').fill(fields.description)
  await form.getByRole('button', { name: 'Save changes' }).click()
  await form.waitFor({ state: 'detached', timeout: 5000 })
}

async function remove(who: 'ann' | 'bob', key: string) {
  const page = pages[who]
  await row(page, key)
    .getByRole('button', { name: `Delete ${key}` })
    .click()
  await page
    .getByRole('dialog', { name: `Delete “${key}”?` })
    .getByRole('button', { name: 'Delete flag' })
    .click()
}

/** The conflict table as text: field, before, yours, theirs. */
const table = (page: Page, key: string) =>
  card(page, key)
    .locator('tbody tr')
    .evaluateAll((rows) => rows.map((r) => [...r.children].map((c) => c.textContent ?? '')))

beforeAll(async () => {
  server = await spawnServer('packages/flat-api/dist/cli.js', {
    DATABASE_URL: `sqlite:${dir.file('flags.sqlite')}`,
    POLL_INTERVAL_MS: '200',
  })
  for (const flag of SEED) expect((await api('POST', '/api/flags', flag)).status).toBe(200)
  browser = await launchChromium()
})

afterAll(async () => {
  await browser?.close()
  server?.kill()
  dir.remove()
})

describe('conflicts in the flag console', () => {
  it('0. Ann and Bob open the console, each with a name kept in the browser (no name form shown)', async () => {
    await open('ann', 'Ann')
    await open('bob', 'Bob')
    expect(await pages.ann.locator('.name-form').count()).toBe(0)
  })

  it('1. same field, Ann first: Bob sees who changed it, base / his / hers, keeps his; the audit names both', async () => {
    await offline('ann', 'bob')
    await edit('ann', 'checkout', { rollout: '10' })
    await edit('bob', 'checkout', { rollout: '90' })
    await online('ann')
    await expect.poll(async () => (await serverFlag('checkout'))?.rollout_percentage, WITHIN).toBe(10)
    await online('bob')

    const bob = pages.bob
    await card(bob, 'checkout').waitFor({ timeout: 20_000 })
    await expect
      .poll(() => card(bob, 'checkout').locator('.conflict-head').textContent(), WITHIN)
      .toMatch(/^Ann changed “checkout” on .+ while you were changing it$/)
    expect(await table(bob, 'checkout')).toEqual([['Rollout', '25%', '90%', '10%']])
    await expect
      .poll(() => bob.locator('#sync-status .pill-text').textContent(), WITHIN)
      .toBe('1 change needs your decision')
    // The row shows the server's value, marked as waiting for a decision.
    await expect.poll(() => row(bob, 'checkout').locator('.rollout-text').textContent(), WITHIN).toBe('10% of users')
    expect(await row(bob, 'checkout').locator('.badge-conflict').isVisible()).toBe(true)
    expect((await serverFlag('checkout'))?.rollout_percentage).toBe(10)
    await screenshot(bob, 'conflict-01-same-field')

    await card(bob, 'checkout').getByRole('button', { name: 'Keep mine' }).click()
    await card(bob, 'checkout').waitFor({ state: 'detached', timeout: 20_000 })
    await expect.poll(async () => (await serverFlag('checkout'))?.rollout_percentage, WITHIN).toBe(90)
    await expect
      .poll(() => row(pages.ann, 'checkout').locator('.rollout-text').textContent(), WITHIN)
      .toBe('90% of users')
    expect(await row(bob, 'checkout').locator('.badge-conflict').count()).toBe(0)
    expect((await authors('checkout')).slice(0, 2)).toEqual([
      'Bob update rollout_percentage',
      'Ann update rollout_percentage',
    ])

    // The history drawer tells the same story.
    await row(bob, 'checkout').getByRole('button', { name: 'History of checkout' }).click()
    const drawer = bob.getByRole('dialog', { name: 'History of “checkout”' })
    await expect.poll(() => drawer.locator('.history-entry').count(), WITHIN).toBe(3)
    const whos = await drawer.locator('.history-who strong').allTextContents()
    expect(whos).toEqual(['Bob', 'Ann', 'Someone'])
    // The names are what each device declared; the server never checked them, and the drawer says so.
    expect(await drawer.locator('.history-who').first().textContent()).toMatch(/^Bob \(declared by the device\) · /)
    expect(await drawer.locator('.history-declared').count()).toBe(2)
    expect(await drawer.locator('.history-entry').first().locator('.history-what li').allTextContents()).toEqual([
      'Rollout: 10% → 90%',
    ])
    expect(await drawer.locator('.history-from').first().textContent()).toMatch(/^from a device \(change set \w{8}\)$/)
    await screenshot(bob, 'conflict-02-history-drawer', { fullPage: false })
    await drawer.getByRole('button', { name: 'Close' }).click()
  })

  it('2. different fields, Bob first then Ann: merged on the server, no conflict on either side', async () => {
    await offline('ann', 'bob')
    await edit('ann', 'search', { description: 'Typo-tolerant search' })
    await edit('bob', 'search', { rollout: '50' })
    await online('bob')
    await online('ann')
    await expect
      .poll(() => serverFlag('search'), WITHIN)
      .toMatchObject({ description: 'Typo-tolerant search', rollout_percentage: 50 })
    for (const page of [pages.ann, pages.bob]) {
      expect(await page.locator('#conflicts .conflict').count()).toBe(0)
      await expect.poll(() => row(page, 'search').locator('.rollout-text').textContent(), WITHIN).toBe('50% of users')
    }
    expect((await authors('search')).slice(0, 2)).toEqual(['Ann update description', 'Bob update rollout_percentage'])
  })

  it('3. same field, Bob first: Ann takes theirs (nothing of hers is sent), then merges the next one by hand', async () => {
    await offline('ann', 'bob')
    await edit('ann', 'checkout', { rollout: '30' })
    await edit('bob', 'checkout', { rollout: '70' })
    await online('bob')
    await online('ann')
    const ann = pages.ann
    await card(ann, 'checkout').waitFor({ timeout: 20_000 })
    expect(await table(ann, 'checkout')).toEqual([['Rollout', '90%', '30%', '70%']])
    await card(ann, 'checkout').getByRole('button', { name: 'Take theirs' }).click()
    await card(ann, 'checkout').waitFor({ state: 'detached', timeout: 20_000 })
    await expect.poll(() => row(ann, 'checkout').locator('.rollout-text').textContent(), WITHIN).toBe('70% of users')
    expect((await serverFlag('checkout'))?.rollout_percentage).toBe(70)
    expect((await authors('checkout'))[0]).toBe('Bob update rollout_percentage')

    // Again, and this time Ann edits a merge.
    await offline('ann', 'bob')
    await edit('ann', 'checkout', { rollout: '40' })
    await edit('bob', 'checkout', { rollout: '60' })
    await online('ann')
    await online('bob')
    const bob = pages.bob
    await card(bob, 'checkout').waitFor({ timeout: 20_000 })
    await card(bob, 'checkout').getByRole('button', { name: 'Edit a merge' }).click()
    const merge = bob.getByRole('dialog', { name: 'Merge “checkout”' })
    await merge.getByLabel('Rollout').fill('55')
    await screenshot(bob, 'conflict-03-merge-dialog', { fullPage: false })
    await merge.getByRole('button', { name: 'Save merge' }).click()
    await card(bob, 'checkout').waitFor({ state: 'detached', timeout: 20_000 })
    await expect.poll(async () => (await serverFlag('checkout'))?.rollout_percentage, WITHIN).toBe(55)
    expect((await authors('checkout')).slice(0, 2)).toEqual([
      'Bob update rollout_percentage',
      'Ann update rollout_percentage',
    ])
  })

  it('4. delete vs edit, the delete first: Bob re-creates the flag with his changes', async () => {
    await offline('ann', 'bob')
    await remove('ann', 'promo')
    await edit('bob', 'promo', { description: 'Spring promotion' })
    await online('ann')
    await expect.poll(() => serverFlag('promo'), WITHIN).toBeNull()
    await online('bob')
    const bob = pages.bob
    await card(bob, 'promo').waitFor({ timeout: 20_000 })
    expect(await card(bob, 'promo').getAttribute('data-kind')).toBe('deleted')
    await expect
      .poll(() => card(bob, 'promo').locator('.conflict-head').textContent(), WITHIN)
      .toMatch(/^Ann deleted “promo” on .+ while you were changing it$/)
    expect(await table(bob, 'promo')).toEqual([['Description', 'Winter promotion', 'Spring promotion', 'Deleted']])
    await screenshot(bob, 'conflict-04-deleted')
    await card(bob, 'promo').getByRole('button', { name: 'Re-create with my changes' }).click()
    await card(bob, 'promo').waitFor({ state: 'detached', timeout: 20_000 })
    await expect
      .poll(() => serverFlag('promo'), WITHIN)
      .toMatchObject({ description: 'Spring promotion', is_enabled: false })
    await expect.poll(() => row(pages.ann, 'promo').count(), WITHIN).toBe(1)
    expect((await authors('promo')).slice(0, 2)).toEqual([
      'Bob create key,is_enabled,rollout_percentage,description,rules',
      'Ann delete key,is_enabled,rollout_percentage,description,rules',
    ])
  })

  it('5. delete vs edit, the edit first: Ann is told Bob changed it; keeping her delete deletes it', async () => {
    await offline('ann', 'bob')
    await remove('ann', 'promo')
    await edit('bob', 'promo', { rollout: '20' })
    await online('bob')
    await expect.poll(async () => (await serverFlag('promo'))?.rollout_percentage, WITHIN).toBe(20)
    await online('ann')
    const ann = pages.ann
    await card(ann, 'promo').waitFor({ timeout: 20_000 })
    await expect
      .poll(() => card(ann, 'promo').locator('.conflict-head').textContent(), WITHIN)
      .toMatch(/^Bob changed “promo”/)
    expect(await table(ann, 'promo')).toEqual([['Rollout', 'Everyone', 'Deleted', '20%']])
    // Until Ann decides, the flag is back in her list as the server has it.
    await expect.poll(() => row(ann, 'promo').count(), WITHIN).toBe(1)
    await screenshot(ann, 'conflict-05-delete-after-edit')
    await card(ann, 'promo').getByRole('button', { name: 'Keep mine' }).click()
    await expect.poll(() => serverFlag('promo'), WITHIN).toBeNull()
    for (const page of [pages.ann, pages.bob]) await expect.poll(() => row(page, 'promo').count(), WITHIN).toBe(0)
    expect((await authors('promo'))[0]).toBe('Ann delete key,is_enabled,rollout_percentage,description,rules')
  })

  it('6. a change the server rejects outright: Discard asks first, says what is lost, and Cancel keeps it', async () => {
    const ann = pages.ann
    // An edit of a flag that never existed, written into Ann's outbox the way an older client could have left it.
    await ann.evaluate(
      () =>
        new Promise<void>((resolve, reject) => {
          const open = indexedDB.open('flagsync')
          open.onerror = () => reject(open.error)
          open.onsuccess = () => {
            const tx = open.result.transaction('ops', 'readwrite')
            tx.objectStore('ops').add({
              op: { action: 'update', collection: 'flags', recordId: 'never-was', changes: { is_enabled: true } },
              queuedAt: Date.now(),
            })
            tx.oncomplete = () => {
              open.result.close()
              resolve()
            }
            tx.onerror = () => reject(tx.error)
          }
        }),
    )
    await expect.poll(() => pillState(ann), WITHIN).toMatchObject({ state: 'blocked' })
    const banner = ann.getByRole('alert').filter({ hasText: 'Sync is blocked' })
    await banner.getByRole('button', { name: /^Discard/ }).click()
    const confirm = ann.getByRole('dialog', { name: 'Discard this change?' })
    expect(await confirm.locator('.dialog-text').textContent()).toBe(
      '“Turn on “never-was”” will not be sent to the server and cannot be recovered. Your other changes stay.',
    )
    await screenshot(ann, 'conflict-06-discard-confirm', { fullPage: false })
    await confirm.getByRole('button', { name: 'Cancel' }).click()
    expect(await pillState(ann)).toMatchObject({ state: 'blocked' })

    await banner.getByRole('button', { name: /^Discard/ }).click()
    await ann
      .getByRole('dialog', { name: 'Discard this change?' })
      .getByRole('button', { name: 'Discard change' })
      .click()
    await expect.poll(() => pillState(ann), WITHIN).toMatchObject({ state: 'idle', pending: 0 })
    expect(await serverFlag('never-was')).toBeNull()
    expect(pageErrors).toEqual([])
  })
})
