/**
 * Kill the client process mid-delivery. The client is a real
 * Chromium (spawned by the test, on its own profile directory) running the
 * built flag console; a proxy in front of the real server process lets a
 * /sync request reach the server, which applies it and answers, but keeps the
 * answer from the browser. The whole browser is then SIGKILLed. A new
 * Chromium on the same profile opens the console again: its sync client finds
 * the persisted batch in IndexedDB, resends it with the same batchId, and the
 * receiver answers it as a duplicate without applying it again.
 *
 * To make a second application visible in the flag itself (a toggle is
 * idempotent), another admin turns the flag back off through the API while the
 * browser is dead: had the resent batch been applied again, the flag would be
 * on. The change log and the applied batch ids must show one application.
 */
import { openDatabase, TABLES } from '@flagsync/store'
import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { tempDir } from '@flagsync/test-support/temp-dir'
import type { Locator, Page } from 'playwright-core'
import { afterEach, describe, expect, it } from 'vitest'
import { type ChromiumProcess, startChromium } from '../faults/chromium-process.js'
import { type SyncProxy, startSyncProxy } from '../faults/sync-proxy.js'
import { screenshot, watchErrors } from './browser.js'

const WITHIN = { timeout: 30_000, interval: 100 }
const KEY = 'dark-mode'
const SEED = [
  { key: KEY, is_enabled: false, description: 'Dark colour scheme for the dashboard' },
  { key: 'search-v2', is_enabled: true, rollout_percentage: 20, description: 'Typo-tolerant search' },
]

const cleanups: Array<() => Promise<unknown> | unknown> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      await cleanup()
    } catch {
      // keep cleaning up
    }
  }
})

const flagSwitch = (page: Page, key: string): Locator => page.getByRole('switch', { name: key, exact: true })
const keysOn = (page: Page): Promise<string[]> =>
  page.locator('li.flag').evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.key ?? ''))
const pillState = (page: Page) =>
  page.locator('#sync-status').evaluate((el) => ({
    state: (el as HTMLElement).dataset.state,
    pending: Number((el as HTMLElement).dataset.pending),
  }))
const pendingItems = (page: Page): Promise<string[]> => page.locator('#pending-list .pending-op').allTextContents()

describe('kill -9 of the browser after its batch left and before the answer came', () => {
  it('a new browser on the same profile resends the same batchId; the receiver dedupes it', async () => {
    const dir = tempDir('flagsync-e2e-client-kill-')
    cleanups.push(() => dir.remove())
    const databaseUrl = `sqlite:${dir.file('flags.sqlite')}`
    const server: SpawnedServer = await spawnServer('packages/flat-api/dist/cli.js', {
      DATABASE_URL: databaseUrl,
      POLL_INTERVAL_MS: '200',
    })
    cleanups.push(() => server.kill('SIGKILL'))
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`${server.url}${path}`, {
        method,
        headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    const serverFlag = async (key: string) => {
      const res = await api('GET', `/api/flags/${key}`)
      expect(res.status).toBe(200)
      return (await res.json()) as { key: string; is_enabled: boolean; description: string | null; revision: number }
    }
    for (const flag of SEED) expect((await api('POST', '/api/flags', flag)).status).toBe(200)

    const proxy: SyncProxy = await startSyncProxy(server.url)
    cleanups.push(() => proxy.close())
    const errors: string[] = []

    const openConsole = async (chrome: ChromiumProcess, label: string): Promise<Page> => {
      const context = chrome.browser.contexts()[0]
      if (!context) throw new Error('the browser has no default context')
      const page = await context.newPage()
      watchErrors(page, label, errors)
      await page.goto(proxy.url)
      await expect.poll(() => keysOn(page), WITHIN).toEqual(SEED.map((f) => f.key).sort())
      await expect.poll(() => page.locator('#stream-status').getAttribute('data-state'), WITHIN).toBe('live')
      return page
    }

    // ---- browser 1: an edit whose answer never arrives ----------------------------------
    const profile = dir.file('chromium-profile')
    const first = await startChromium(profile)
    cleanups.push(() => first.kill())
    const pageA = await openConsole(first, 'first browser')
    await expect.poll(() => pillState(pageA), WITHIN).toEqual({ state: 'idle', pending: 0 })
    expect(proxy.exchanges).toEqual([])

    proxy.mode = 'hold'
    await flagSwitch(pageA, KEY).click()
    // The server got the batch, applied it and answered; the browser is still waiting.
    const held = await proxy.waitForExchange(() => true, 30_000)
    expect(held).toMatchObject({
      held: true,
      status: 200,
      operations: [{ action: 'update', collection: 'flags', recordId: KEY, changes: { is_enabled: true } }],
    })
    const applied = await serverFlag(KEY)
    expect(applied.is_enabled).toBe(true)
    expect(held.answer).toEqual({ batchId: held.batchId, applied: 1, revision: applied.revision })
    await expect.poll(() => pillState(pageA), WITHIN).toEqual({ state: 'syncing', pending: 1 })
    expect(await pendingItems(pageA)).toEqual([`Turn on “${KEY}”`])
    expect(await flagSwitch(pageA, KEY).getAttribute('aria-checked')).toBe('true')
    await screenshot(pageA, '40-client-kill-before-kill')

    expect(await first.kill()).toBe('SIGKILL')
    // Only one request was made: the held one (no retry, no second batch) before the browser died.
    expect(proxy.exchanges.map((e) => e.batchId)).toEqual([held.batchId])

    // ---- while the browser is dead, another admin turns the flag off again ------------------
    const patched = await api('PATCH', `/api/flags/${KEY}`, {
      is_enabled: false,
      description: 'Turned off again while the browser was dead',
    })
    expect(patched.status).toBe(200)

    // ---- browser 2, same profile: the persisted batch goes out again ------------------------
    proxy.mode = 'pass'
    const second = await startChromium(profile)
    cleanups.push(() => second.kill())
    const pageB = await openConsole(second, 'second browser')
    const resent = await proxy.waitForExchange((e) => e.batchId === held.batchId, 30_000, 1)
    expect(resent).toMatchObject({ held: false, status: 200, operations: held.operations })
    expect(resent.answer).toEqual({ batchId: held.batchId, applied: 0, duplicate: true })
    await expect.poll(() => pillState(pageB), WITHIN).toEqual({ state: 'idle', pending: 0 })
    expect(await pendingItems(pageB)).toEqual([])
    // Without a reload, the page shows the server's flag: the API's later edit, not the replayed
    // toggle (a duplicate acknowledgement does not hold the replayed edit in the local view).
    await expect.poll(() => keysOn(pageB), WITHIN).toEqual(SEED.map((f) => f.key).sort())
    // Well under the flag client's 30 s echo timeout, so a held replayed edit would fail this.
    await expect
      .poll(() => flagSwitch(pageB, KEY).getAttribute('aria-checked'), { timeout: 5000, interval: 100 })
      .toBe('false')
    expect(await pillState(pageB)).toEqual({ state: 'idle', pending: 0 })
    await screenshot(pageB, '41-client-kill-after-resume')

    // ---- applied exactly once --------------------------------------------------------------
    expect(await serverFlag(KEY)).toEqual({
      key: KEY,
      is_enabled: false,
      rollout_percentage: null,
      description: 'Turned off again while the browser was dead',
      rules: [],
      revision: expect.any(Number), // read-only, the change log's revision of the last change
    })
    // Every exchange was this one batch: the held first attempt and the resent one.
    expect(proxy.exchanges.map((e) => e.batchId)).toEqual([held.batchId, held.batchId])
    const db = await openDatabase(databaseUrl)
    cleanups.push(() => db.close())
    const batches = await db.knex(TABLES.batches).select('batch_id', 'applied')
    expect(batches.map((b) => ({ batch_id: b.batch_id, applied: Number(b.applied) }))).toEqual([
      { batch_id: held.batchId, applied: 1 },
    ])
    // Seed insert, the toggle once, the API's edit: a second application would be a fourth entry.
    const log = (await db.knex(TABLES.changes).where('key', KEY).orderBy('revision').select('data')) as Array<{
      data: string
    }>
    expect(log.map((r) => (JSON.parse(r.data) as { is_enabled: boolean }).is_enabled)).toEqual([false, true, false])
    expect(errors).toEqual([])
  }, 180_000)
})
