/**
 * The console against a server started with SDK_KEY: the stream refuses the
 * page until it has the key; the page asks for it once, keeps it in this
 * browser, and then streams and syncs with it.
 */

import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { tempDir } from '@flagsync/test-support/temp-dir'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, screenshot, watchErrors } from './browser.js'

const KEY = 'console-e2e-key'
const WITHIN = { timeout: 20_000, interval: 100 }
const dir = tempDir('flagsync-e2e-auth-')
let server: SpawnedServer
let browser: Awaited<ReturnType<typeof launchChromium>>

async function getFlag(key: string): Promise<{ is_enabled: boolean }> {
  const res = await fetch(`${server.url}/api/flags/${key}`, { headers: { Authorization: `Bearer ${KEY}` } })
  expect(res.status).toBe(200)
  return (await res.json()) as { is_enabled: boolean }
}

beforeAll(async () => {
  server = await spawnServer('packages/flat-api/dist/cli.js', {
    DATABASE_URL: `sqlite:${dir.file('flags.sqlite')}`,
    POLL_INTERVAL_MS: '200',
    SDK_KEY: KEY,
  })
  const res = await fetch(`${server.url}/api/flags`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ key: 'pricing-page', is_enabled: false, description: 'The new pricing page' }),
  })
  expect(res.status).toBe(200)
  browser = await launchChromium()
})

afterAll(async () => {
  await browser?.close()
  server?.kill()
  dir.remove()
})

describe('the flag console on a server with SDK_KEY', () => {
  it('asks for the key, keeps it, then shows live flags and delivers edits with it', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    const page = await context.newPage()
    const errors = watchErrors(page, 'page')
    await page.goto(server.url)

    const dialog = page.getByRole('dialog', { name: 'Connect to the server' })
    await dialog.waitFor({ timeout: 20_000 })
    expect(await page.locator('#stream-status').getAttribute('data-state')).toBe('error')
    await dialog.getByLabel('SDK key').fill(KEY)
    await screenshot(page, '10-auth-connect-dialog', { fullPage: false })
    await Promise.all([page.waitForEvent('load'), dialog.getByRole('button', { name: 'Connect' }).click()])

    await expect
      .poll(
        () => page.locator('li.flag').evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.key)),
        WITHIN,
      )
      .toEqual(['pricing-page'])
    await expect.poll(() => page.locator('#stream-status').getAttribute('data-state'), WITHIN).toBe('live')
    expect(await page.evaluate(() => localStorage.getItem('flagsync.console.sdkKey'))).toBe(KEY)
    expect(await page.getByRole('button', { name: 'Server key' }).isVisible()).toBe(true)

    await page.getByRole('switch', { name: 'pricing-page', exact: true }).click()
    await expect.poll(async () => (await getFlag('pricing-page')).is_enabled, WITHIN).toBe(true)
    await expect.poll(() => page.locator('#sync-status').getAttribute('data-pending'), WITHIN).toBe('0')
    await screenshot(page, '11-auth-connected')
    expect(errors).toEqual([])
    await context.close()
  })

  it('says the key was rejected when the saved key is wrong, and the header does not claim all is synced', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    const page = await context.newPage()
    const errors = watchErrors(page, 'page')
    await page.goto(server.url)
    const dialog = page.getByRole('dialog', { name: 'Connect to the server' })
    await dialog.waitFor({ timeout: 20_000 })
    // No key yet: asked for, without an error.
    expect(await dialog.getByRole('alert').count()).toBe(0)
    await expect.poll(() => page.locator('#sync-status').getAttribute('data-key'), WITHIN).toBe('needed')
    await dialog.getByLabel('SDK key').fill('not-the-key')
    await Promise.all([page.waitForEvent('load'), dialog.getByRole('button', { name: 'Connect' }).click()])

    // The page reloads with the wrong key: the server refuses it, and the dialog says so.
    const again = page.getByRole('dialog', { name: 'Connect to the server' })
    await again.waitFor({ timeout: 20_000 })
    const alert = again.getByRole('alert')
    await expect.poll(() => alert.textContent(), WITHIN).toContain('The server rejected the key saved in this browser')
    expect(await again.getByLabel('SDK key').getAttribute('aria-invalid')).toBe('true')
    const pill = page.locator('#sync-status')
    await expect.poll(() => pill.getAttribute('data-key'), WITHIN).toBe('rejected')
    expect(await pill.textContent()).toContain('Key rejected')
    expect(await pill.textContent()).not.toContain('All changes synced')
    expect(await page.locator('#stream-status').getAttribute('data-state')).toBe('error')
    expect(await page.locator('#pending-empty').textContent()).toContain('the server rejected this browser’s SDK key')
    await screenshot(page, '12-auth-key-rejected', { fullPage: false })

    // The right key clears it all.
    await again.getByLabel('SDK key').fill(KEY)
    await Promise.all([page.waitForEvent('load'), again.getByRole('button', { name: 'Connect' }).click()])
    await expect.poll(() => page.locator('#stream-status').getAttribute('data-state'), WITHIN).toBe('live')
    await expect.poll(() => pill.getAttribute('data-key'), WITHIN).toBe('ok')
    await expect.poll(() => pill.textContent(), WITHIN).toContain('All changes synced')
    expect(await page.locator('#pending-empty').textContent()).toContain('Everything is synced.')
    expect(errors).toEqual([])
    await context.close()
  })
})
