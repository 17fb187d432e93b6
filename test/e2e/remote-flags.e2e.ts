/**
 * The flag client's remote-evaluation mode in Chromium: a page served by a real HTTP server of another origin
 * holds a client key, shows the values the flag service evaluated for its context, and a toggle made through the
 * REST API reaches it over the refresh stream. Every evaluation answer the page receives is checked for rules.
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
})
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
})
