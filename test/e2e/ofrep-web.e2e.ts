/**
 * OpenFeature's own browser provider (`@openfeature/ofrep-web-provider` with
 * `@openfeature/web-sdk`, nothing of flagsync in the page) against the flag
 * service's OFREP routes: a page served by a real HTTP server of another
 * origin shows a flag, and a toggle through the REST API reaches it over the
 * refresh stream (the provider's polling is off by default, so only the
 * stream can deliver it). The page holds a client key, the kind meant to be shown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FlagPageScenario, startFlagPageScenario } from './flag-page-scenario.js'

const ENTRY = `import { OpenFeature, ProviderEvents } from '@openfeature/web-sdk'
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider'
const params = new URLSearchParams(location.search)
const provider = new OFREPWebProvider({
  baseUrl: params.get('api'),
  headers: [['Authorization', 'Bearer ' + params.get('key')]],
})
await OpenFeature.setContext({ targetingKey: 'visitor-1', country: 'DE' })
await OpenFeature.setProviderAndWait(provider)
const client = OpenFeature.getClient()
const render = () => {
  document.getElementById('banner').textContent = String(client.getBooleanValue('banner', false))
  document.getElementById('color').textContent = client.getStringValue('color', 'none')
}
client.addHandler(ProviderEvents.ConfigurationChanged, render)
render()`

describe('the published OFREP web provider in Chromium against the flag service', () => {
  let scenario: FlagPageScenario
  const errors: string[] = []

  beforeAll(async () => {
    scenario = await startFlagPageScenario(ENTRY)
  })
  afterAll(async () => {
    await scenario?.close()
  })

  it('shows the flags, then a toggle made through the REST API, over the refresh stream', async () => {
    const { page, production } = await scenario.open('ofrep', errors)
    await scenario.toggle(page, production)
    expect(errors).toEqual([])
  })
})
