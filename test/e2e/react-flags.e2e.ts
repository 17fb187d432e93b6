/**
 * examples/react-flags (the Vite build) in Chromium, served by the real flat
 * API server process (CONSOLE_DIR): the server toggles a flag and the React
 * component changes; an edit made offline shows at once, waits in the outbox,
 * and reaches the server when the browser is back online.
 */
import { fileURLToPath } from 'node:url'
import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { tempDir } from '@flagsync/test-support/temp-dir'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, screenshot, watchErrors } from './browser.js'

const APP_DIR = fileURLToPath(new URL('../../examples/react-flags/dist', import.meta.url))
const WITHIN = { timeout: 20_000, interval: 100 }

const dir = tempDir('flagsync-e2e-react-')
let server: SpawnedServer
let browser: Awaited<ReturnType<typeof launchChromium>>
let context: BrowserContext
let page: Page
const pageErrors: string[] = []

async function api(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
}
const serverEnabled = async (key: string) =>
  ((await (await api('GET', `/api/flags/${key}`)).json()) as { is_enabled: boolean }).is_enabled

const checkout = () => page.getByTestId('checkout').textContent()
const streamState = () => page.getByTestId('stream').getAttribute('data-state')
const syncState = () =>
  page
    .getByTestId('sync')
    .evaluate((el) => `${(el as HTMLElement).dataset.state} ${(el as HTMLElement).dataset.pending}`)
const pending = () => page.locator('[data-testid="pending"] li').allTextContents()

beforeAll(async () => {
  server = await spawnServer('packages/flat-api/dist/cli.js', {
    DATABASE_URL: `sqlite:${dir.file('flags.sqlite')}`,
    POLL_INTERVAL_MS: '200',
    CONSOLE_DIR: APP_DIR,
  })
  for (const flag of [
    { key: 'new-checkout', is_enabled: false },
    { key: 'dark-mode', is_enabled: true },
  ]) {
    expect((await api('POST', '/api/flags', flag)).status).toBe(200)
  }
  browser = await launchChromium()
  context = await browser.newContext({ viewport: { width: 1024, height: 768 } })
})

afterAll(async () => {
  await browser?.close()
  server?.kill()
  dir.remove()
})

describe('the React example in Chromium', () => {
  it('0. loads the server’s flags, live, with nothing pending', async () => {
    page = await context.newPage()
    watchErrors(page, 'react', pageErrors)
    await page.goto(`${server.url}/?user=u-1`)
    await expect.poll(streamState, WITHIN).toBe('live')
    await expect.poll(syncState, WITHIN).toBe('idle 0')
    expect(await checkout()).toBe('Classic checkout')
    expect(await page.getByRole('switch', { name: 'dark-mode' }).isChecked()).toBe(true)
    expect(await page.getByTestId('missing-flag').count()).toBe(0)
    await screenshot(page, 'react-00-loaded')
  })

  it('1. a flag toggled on the server changes the component', async () => {
    expect((await api('PATCH', '/api/flags/new-checkout', { is_enabled: true })).status).toBe(200)
    await expect.poll(checkout, WITHIN).toBe('New one-page checkout')
    expect(await page.getByRole('switch', { name: 'new-checkout' }).isChecked()).toBe(true)
    await screenshot(page, 'react-01-server-toggle')
  })

  it('2. offline, a toggle shows at once and waits in the outbox; the server does not have it', async () => {
    await context.setOffline(true)
    await expect.poll(syncState, WITHIN).toBe('offline 0')
    await page.getByRole('switch', { name: 'new-checkout' }).click()
    await expect.poll(checkout, WITHIN).toBe('Classic checkout')
    await expect.poll(pending, WITHIN).toEqual(['update new-checkout'])
    await expect.poll(syncState, WITHIN).toBe('offline 1')
    expect(await serverEnabled('new-checkout')).toBe(true)
    await screenshot(page, 'react-02-offline-edit')
  })

  it('3. back online, the edit is delivered: the server has it, nothing is pending, the page still shows it', async () => {
    await context.setOffline(false)
    await expect.poll(() => serverEnabled('new-checkout'), WITHIN).toBe(false)
    await expect.poll(syncState, WITHIN).toBe('idle 0')
    await expect.poll(pending, WITHIN).toEqual([])
    await expect.poll(streamState, WITHIN).toBe('live')
    expect(await checkout()).toBe('Classic checkout')
    await screenshot(page, 'react-03-delivered')
    expect(pageErrors).toEqual([])
  })

  it('4. a flag the page reads that the server does not have is named on the page', async () => {
    expect((await api('DELETE', '/api/flags/new-checkout')).status).toBe(204)
    const missing = page.getByTestId('missing-flag')
    await expect.poll(() => missing.getAttribute('data-flag'), WITHIN).toBe('new-checkout')
    expect(await missing.textContent()).toBe(
      'No flag new-checkout on the server: showing its fallback, false. Create it to switch it.',
    )
    expect(await checkout()).toBe('Classic checkout')
    expect((await api('POST', '/api/flags', { key: 'new-checkout', is_enabled: true })).status).toBe(200)
    await expect.poll(() => missing.count(), WITHIN).toBe(0)
    expect(await checkout()).toBe('New one-page checkout')
    await screenshot(page, 'react-04-missing-flag')
    expect(pageErrors).toEqual([])
  })
})
