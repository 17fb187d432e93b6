/**
 * @flagsync/server-provider with the real @openfeature/server-sdk against a real flag service: the SDK key
 * picks the environment; typed values, variant names and reasons match `evaluate`, no request per evaluation, a
 * REST PATCH arrives, a wrong key is FATAL, and a restart on the same port and database is STALE then READY; on
 * SQLite and PostgreSQL.
 */
import { evaluate } from '@flagsync/evaluation'
import type { EvaluableFlag } from '@flagsync/protocol'
import { FlagsyncServerProvider } from '@flagsync/server-provider'
import { DIALECTS } from '@flagsync/test-support/databases'
import { ErrorCode, OpenFeature, ProviderEvents, ProviderStatus } from '@openfeature/server-sdk'
import { afterEach, describe, expect, it } from 'vitest'
import { createProject, flagsOf, putFlag } from '../../packages/flag-service/test/flags/support.js'
import { type Harness, startHarness } from '../../packages/flag-service/test/harness.js'

const harnesses: Harness[] = []
afterEach(async () => {
  await OpenFeature.close()
  for (const h of harnesses.splice(0).reverse()) await h.dispose()
})

const provider = (h: Harness, sdkKey: string) =>
  new FlagsyncServerProvider({
    streamUrl: `${h.url}/stream`,
    sdkKey,
    reconnect: { baseMs: 20, maxMs: 100, jitter: 0 },
  })

function countRequests(h: Harness): string[] {
  const urls: string[] = []
  h.server.server.prependListener('request', (req) => urls.push(`${req.method} ${req.url}`))
  return urls
}

const BANNER = {
  key: 'banner',
  is_enabled: true,
  flag_type: 'string',
  default_value: 'none',
  disabled_value: 'off',
  rules: [{ attribute: 'plan', operator: 'equals', values: ['pro'], variant: 'gold' }],
  variants: [
    { weight: 1, value: 'blue' },
    { weight: 1, value: 'green' },
  ],
}
const LIMITS = { key: 'limits', is_enabled: true, flag_type: 'json', default_value: { seats: 5 } }

describe.each(DIALECTS)('FlagsyncServerProvider against the flag service on %s', (dialect) => {
  async function start(options: Parameters<typeof startHarness>[1] = {}): Promise<Harness> {
    const h = await startHarness(dialect, options)
    harnesses.push(h)
    return h
  }

  it('resolves typed flags of the key’s environment from memory as evaluate does, and follows a PATCH', async () => {
    const h = await start()
    const p = await createProject(h)
    await putFlag(h, p.production, BANNER)
    await putFlag(h, p.production, LIMITS)
    await putFlag(h, p.staging, { key: 'staging-only', is_enabled: true })
    await OpenFeature.setProviderAndWait(provider(h, p.sdkKey))
    const of = OpenFeature.getClient()
    const changed: string[][] = []
    of.addHandler(ProviderEvents.ConfigurationChanged, (e) => changed.push(e?.flagsChanged ?? []))

    const banner = (await flagsOf(h, p.production).get('banner')).body as EvaluableFlag
    const requests = countRequests(h)
    const variants = new Set<string>()
    for (let i = 0; i < 60; i++) {
      const context = { targetingKey: `user-${i}`, plan: i % 4 === 0 ? 'pro' : 'free' }
      const expected = evaluate(banner, { user_id: context.targetingKey, plan: context.plan })
      const details = await of.getStringDetails('banner', 'fallback', context)
      expect(details).toMatchObject({ value: expected.value, reason: expected.reason })
      // OpenFeature's variant is the served variant's value, not the evaluator's index.
      if (expected.variant !== undefined) {
        expect(details.variant).toBe(String(banner.variants?.[Number(expected.variant)]?.value))
        variants.add(details.variant ?? '')
      }
    }
    expect([...variants].sort()).toEqual(['blue', 'green'])
    expect(await of.getObjectDetails('limits', {}, { targetingKey: 'u' })).toMatchObject({
      value: { seats: 5 },
      reason: 'DEFAULT',
    })
    expect(await of.getBooleanDetails('staging-only', false)).toMatchObject({ errorCode: ErrorCode.FLAG_NOT_FOUND })
    expect(await of.getBooleanDetails('banner', false, { targetingKey: 'u' })).toMatchObject({
      value: false,
      errorCode: ErrorCode.TYPE_MISMATCH,
    })
    expect(requests).toEqual([])

    expect((await flagsOf(h, p.production).patch('banner', { is_enabled: false })).status).toBe(200)
    await expect.poll(() => of.getStringValue('banner', 'fallback', { targetingKey: 'u' })).toBe('off')
    expect(await of.getStringDetails('banner', 'fallback', { targetingKey: 'u' })).toMatchObject({ reason: 'DISABLED' })
    expect(changed).toEqual([['banner']])
    expect(requests).toEqual([`PATCH /api/environments/${p.production}/flags/banner`])
  })

  it('fails setProviderAndWait with PROVIDER_FATAL for an unknown SDK key', async () => {
    const h = await start()
    await expect(OpenFeature.setProviderAndWait(provider(h, 'sk_live_unknown'))).rejects.toThrow(/refused the SDK key/)
    const of = OpenFeature.getClient()
    expect(of.providerStatus).toBe(ProviderStatus.FATAL)
    expect(await of.getStringDetails('banner', 'x')).toMatchObject({ value: 'x', errorCode: ErrorCode.PROVIDER_FATAL })
  })

  it('goes STALE while the service is down (values still answer) and READY with the changes it missed', async () => {
    const h = await start()
    const p = await createProject(h)
    await putFlag(h, p.production, BANNER)
    await OpenFeature.setProviderAndWait(provider(h, p.sdkKey))
    const of = OpenFeature.getClient()
    const events: string[] = []
    for (const type of [ProviderEvents.Ready, ProviderEvents.Stale, ProviderEvents.ConfigurationChanged]) {
      of.addHandler(type, () => events.push(type))
    }
    events.splice(0)

    await h.stop()
    await expect.poll(() => of.providerStatus).toBe(ProviderStatus.STALE)
    expect(await of.getStringValue('banner', 'fallback', { targetingKey: 'u', plan: 'pro' })).toBe('gold')

    const side = await start({ databaseUrl: h.databaseUrl })
    expect((await flagsOf(side, p.production).patch('banner', { is_enabled: false })).status).toBe(200)
    await side.stop()

    const restarted = await start({ databaseUrl: h.databaseUrl, env: { PORT: String(h.server.port) } })
    expect(restarted.url).toBe(h.url)
    await expect.poll(() => of.providerStatus, { timeout: 5000 }).toBe(ProviderStatus.READY)
    expect(await of.getStringValue('banner', 'fallback', { targetingKey: 'u', plan: 'pro' })).toBe('off')
    expect(events).toEqual([ProviderEvents.Stale, ProviderEvents.ConfigurationChanged, ProviderEvents.Ready])
  })
})
