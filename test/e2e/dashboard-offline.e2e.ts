/**
 * The dashboard offline: the service worker serves the shell, the page shows
 * the projects and flags it saved, read-only except the on/off switches,
 * which are queued in the environment's outbox (the sync client) and survive
 * a reload; back online they are delivered through the service's
 * `POST /api/environments/:id/sync` and the pending panel empties.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type SpawnedServer, spawnServer } from '../support/spawn-server.js'
import { tempDir } from '../support/temp-dir.js'
import { launchChromium, screenshot, watchErrors } from './browser.js'

const ADMIN = { email: 'admin@example.com', password: 'offline e2e pw' }
const WITHIN = { timeout: 15_000, interval: 50 }
const dir = tempDir('flagsync-e2e-dashboard-offline-')
let server: SpawnedServer
let browser: Browser
let context: BrowserContext
let page: Page
let cookie = ''
let production = ''
const errors: string[] = []

async function call<T>(method: string, path: string, body?: unknown) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', 'X-Service-Request': 'true', Cookie: cookie },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: (res.status === 204 ? undefined : await res.json()) as T }
}

beforeAll(async () => {
  server = await spawnServer('packages/flag-service/dist/cli.js', {
    DATABASE_URL: `sqlite:${dir.file('service.sqlite')}`,
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    WORKSPACE_NAME: 'Acme',
    POLL_INTERVAL_MS: '200',
  })
  const login = await fetch(`${server.url}/api/auth/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(ADMIN),
  })
  cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
  const projects = await call<Array<{ id: string }>>('GET', '/api/projects')
  const envs = await call<Array<{ id: string; slug: string }>>(
    'GET',
    `/api/projects/${projects.body[0]?.id}/environments`,
  )
  production = envs.body.find((e) => e.slug === 'production')?.id ?? ''
  expect(
    (await call('POST', `/api/environments/${production}/flags`, { key: 'night-mode', is_enabled: false })).status,
  ).toBe(200)
  browser = await launchChromium()
  context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
  context.setDefaultTimeout(10_000)
  page = await context.newPage()
  watchErrors(page, 'page', errors)
})

afterAll(async () => {
  await browser?.close()
  server?.kill()
  dir.remove()
})

const serverState = async () =>
  (await call<{ is_enabled: boolean }>('GET', `/api/environments/${production}/flags/night-mode`)).body.is_enabled

describe('the dashboard offline', () => {
  it('loads online and installs its service worker', async () => {
    await page.goto(server.url)
    await page.getByLabel('Email').fill(ADMIN.email)
    await page.getByLabel('Password').fill(ADMIN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
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

    await page.reload()
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
    expect(await page.getByRole('button', { name: 'New flag' }).isDisabled()).toBe(true)
    await screenshot(page, 'dashboard-offline-01-queued')
    expect(await serverState()).toBe(false)
  })

  it('delivers the queued toggle through the sync route once back online', async () => {
    await context.setOffline(false)
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
    await context.setOffline(false)
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
