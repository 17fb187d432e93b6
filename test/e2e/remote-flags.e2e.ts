/**
 * The flag client's remote-evaluation mode in Chromium: a page served by a real HTTP server of another origin
 * holds a client key, shows the values the flag service evaluated for its context, and a toggle made through the
 * REST API reaches it over the refresh stream. Every evaluation answer the page receives is checked for rules, and
 * impressions the page could not send go out from its next load.
 */
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FlagPageScenario, startFlagPageScenario } from './flag-page-scenario.js'

/** The page's script: the remote flag client, configured from the page's query string. */
const ENTRY = `import { createRemoteFlagClient } from '@flagsync/flag-client'
const params = new URLSearchParams(location.search)
const flags = createRemoteFlagClient({
  baseUrl: params.get('api'),
  clientKey: params.get('key'),
  context: { user_id: 'visitor-1', country: 'DE' },
  environmentId: params.get('env') ?? undefined,
})
window.flags = flags
const render = () => {
  document.getElementById('banner').textContent = String(flags.isEnabled('banner'))
  document.getElementById('color').textContent = flags.getValue('color', undefined, 'none')
}
flags.subscribe((e) => { if (e.type === 'flags') render() })
await flags.ready()
render()`

describe('the remote flag client in Chromium against the flag service', () => {
  let scenario: FlagPageScenario
  const errors: string[] = []

  beforeAll(async () => {
    scenario = await startFlagPageScenario(ENTRY)
  })
  afterAll(async () => {
    await scenario?.close()
  })

  it('shows its values, then REST toggles over the refresh stream, and receives no rule', async () => {
    const answers: Promise<string>[] = []
    const watch = (page: Page) =>
      page.on('response', (r) => {
        if (r.url().includes('/ofrep/v1/evaluate/flags') && r.status() === 200) answers.push(r.text())
      })
    const { page, production } = await scenario.open('remote-flags', errors, watch)
    await scenario.toggle(page, production)
    const received = (await Promise.all(answers)).join('')
    expect(received).toContain('"banner"')
    for (const rule of ['"rules"', '"attribute"', '"DE"', 'grey']) expect(received).not.toContain(rule)
    expect(errors).toEqual([])
  })

  it('keeps the impressions it could not send in IndexedDB across a reload, and sends them from the next load', async () => {
    let blocked = true
    const { page, production } = await scenario.open('remote-reload', errors, (p) => {
      void p.route('**/impressions', (route) => (blocked ? route.abort() : route.continue()))
    })
    type Status = { storage: string; queued: number; delivered: number }
    const status = () =>
      page.evaluate(() => (window as unknown as { flags: { impressionStatus(): Status } }).flags.impressionStatus())
    await expect.poll(status).toMatchObject({ storage: 'indexeddb', delivered: 0 })
    await expect.poll(async () => (await status()).queued).toBeGreaterThan(0)
    const queued = (await status()).queued
    const reloadedAt = Date.now()
    blocked = false
    await page.reload()
    await expect.poll(() => page.locator('#banner').textContent()).toBe('true')
    await page.evaluate(() =>
      (window as unknown as { flags: { flushImpressions(): Promise<void> } }).flags.flushImpressions(),
    )
    const { h } = scenario
    const list = await h.call(`/api/environments/${production}/impressions`, { as: h.admin })
    const items = list.body.items as Array<{ flag_key: string; evaluated_at: string }>
    const earlier = items.filter((i) => Date.parse(i.evaluated_at) < reloadedAt)
    expect(earlier.length).toBe(queued)
    expect(new Set(earlier.map((i) => i.flag_key))).toEqual(new Set(['banner', 'color']))
    expect(errors).toEqual([])
  })
})
