/**
 * The webhooks page: a project admin creates a webhook (the signing secret is
 * shown once and verifies the deliveries that follow), a flag write reaches a
 * real receiver, the deliveries table shows it, a test ping and a redelivery
 * (same webhook-id) arrive, the webhook is disabled and then deleted. axe on
 * the page with its deliveries open. A webhook whose target fails shows it is
 * failing, then disabled by a 410, while the page stays open, on a 390 px page.
 */
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Receiver, startReceiver } from '../../packages/flag-service/test/webhooks/support.js'
import { axeViolations } from './axe.js'
import { launchChromium, newPage, screenshot } from './browser.js'
import { type ServiceHarness, startService } from './service-harness.js'
import { signIn } from './sign-in.js'

const ADMIN = { email: 'admin@example.com', password: 'webhooks e2e password' }
const WITHIN = { timeout: 15_000, interval: 50 }
let service: ServiceHarness
let browser: Browser
let page: Page
let receiver: Receiver
const errors: string[] = []

beforeAll(async () => {
  service = await startService({
    prefix: 'flagsync-e2e-webhooks-',
    admin: ADMIN,
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_POLL_MS: '100', WEBHOOK_RETRY_BASE_MS: '200' },
  })
  receiver = await startReceiver()
  browser = await launchChromium()
  page = await newPage(browser, 'admin', errors, { timeoutMs: 10_000 })
})

afterAll(async () => {
  await browser?.close()
  service?.close()
  await receiver?.close()
})

describe('webhooks in the dashboard', () => {
  it('create with the secret shown once, deliveries, test, redeliver, disable, delete', async () => {
    await signIn(page, service.url, ADMIN)
    await page.getByRole('link', { name: 'Default' }).click()
    await page.getByRole('tab', { name: 'Webhooks' }).click()

    await page.getByRole('button', { name: 'New webhook' }).click()
    await page.getByLabel('URL').fill(receiver.url)
    await page.getByLabel('Description').fill('e2e receiver')
    await page.getByRole('button', { name: 'Create webhook' }).click()
    const secretBox = page.getByLabel('Webhook signing secret')
    await secretBox.waitFor()
    receiver.secret = await secretBox.inputValue()
    expect(receiver.secret).toMatch(/^whsec_/)
    await screenshot(page, 'dashboard-webhooks-01-secret-once')
    await page.getByRole('button', { name: 'I have copied it' }).click()
    expect(await page.getByLabel('Webhook signing secret').count()).toBe(0)
    const row = page.locator(`tr[data-webhook="${receiver.url}"]`)
    await expect.poll(() => row.textContent(), WITHIN).toContain('enabled')

    const flag = await service.call('POST', `/api/environments/${service.environmentId('production')}/flags`, {
      key: 'hooked',
      is_enabled: true,
    })
    expect(flag.status).toBe(200)
    const [created] = await receiver.waitFor(1)
    expect(created?.verifyError).toBeNull()
    expect(created?.body).toMatchObject({ type: 'flag.created', data: { flag_key: 'hooked' } })

    await row.getByRole('button', { name: 'Deliveries' }).click()
    const delivery = page.locator(`tr[data-delivery="${created?.id}"]`)
    await expect.poll(() => delivery.textContent(), WITHIN).toContain('delivered')
    expect(await axeViolations(page)).toEqual([])

    await page.getByRole('button', { name: 'Send test event' }).click()
    const [, ping] = await receiver.waitFor(2)
    expect(ping?.body.type).toBe('webhook.test')
    expect(ping?.verifyError).toBeNull()
    await page.getByRole('button', { name: `Redeliver ${created?.id}` }).click()
    const [, , again] = await receiver.waitFor(3)
    expect(again?.id).toBe(created?.id)
    expect(again?.verifyError).toBeNull()
    await screenshot(page, 'dashboard-webhooks-02-deliveries')

    await row.getByRole('button', { name: 'Disable' }).click()
    await expect.poll(() => row.textContent(), WITHIN).toContain('disabled')
    const listed = await service.call<Array<{ enabled: boolean }>>('GET', `/api/projects/${service.projectId}/webhooks`)
    expect(listed.body.map((w) => w.enabled)).toEqual([false])

    await page.getByRole('button', { name: `Delete webhook ${receiver.url}` }).click()
    await page.getByRole('button', { name: 'Delete webhook', exact: true }).click()
    await expect.poll(() => row.count(), WITHIN).toBe(0)
    expect((await service.call<unknown[]>('GET', `/api/projects/${service.projectId}/webhooks`)).body).toEqual([])
    expect(errors).toEqual([])
  })

  it('shows a failing webhook, then the 410 that disabled it, without a reload; fits a 390 px page', async () => {
    await page.setViewportSize({ width: 390, height: 860 })
    receiver.answer = () => ({ status: 500, body: 'down' })
    const hook = await service.call<{ id: string; secret: string }>(
      'POST',
      `/api/projects/${service.projectId}/webhooks`,
      { url: receiver.url, events: ['*'], description: 'a target that fails' },
    )
    expect(hook.status).toBe(200)
    receiver.secret = hook.body.secret
    const row = page.locator(`tr[data-webhook="${receiver.url}"]`)
    await page.getByRole('tab', { name: 'Schedules' }).click()
    await page.getByRole('tab', { name: 'Webhooks' }).click()
    await expect.poll(() => row.textContent(), WITHIN).toContain('enabled')

    const flag = await service.call('PATCH', `/api/environments/${service.environmentId('production')}/flags/hooked`, {
      is_enabled: false,
    })
    expect(flag.status).toBe(200)
    await expect.poll(() => row.textContent(), WITHIN).toContain('failing since')
    await row.getByRole('button', { name: 'Deliveries' }).click()
    await page.locator('tr[data-delivery]').first().waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await screenshot(page, 'dashboard-webhooks-03-failing-390')

    receiver.answer = () => ({ status: 410, body: 'gone' })
    await expect.poll(() => row.textContent(), WITHIN).toContain('the target answered 410 Gone')
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await screenshot(page, 'dashboard-webhooks-04-gone-390')
    expect(errors).toEqual([])
  })
})
