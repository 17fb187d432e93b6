import { DIALECTS } from '@flagsync/test-support/databases'
import { ofrepClient, ofrepPost, openRefresh, refetches } from '@flagsync/test-support/ofrep'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type Harness, startHarness } from '../harness.js'
import { createProject, flagsOf, putFlag, sdkKeyFor } from './support.js'

describe.each(DIALECTS)('OFREP on the flag service on %s', (dialect) => {
  let h: Harness
  const readers: SseReader[] = []
  beforeAll(async () => {
    h = await startHarness(dialect)
  })
  afterEach(() => {
    for (const r of readers.splice(0)) r.close()
  })
  afterAll(async () => {
    await h?.dispose()
  })
  const post = (path: string, body: unknown, key: string, headers: Record<string, string> = {}) =>
    ofrepPost(`${h.url}/ofrep/v1${path}`, body, { Authorization: `Bearer ${key}`, ...headers })

  /** A project whose Production has a segment-targeted string flag gated by a prerequisite, and a split. */
  async function seeded() {
    const p = await createProject(h)
    const segment = await h.call(`/api/projects/${p.id}/segments`, {
      method: 'POST',
      as: h.admin,
      body: {
        key: 'staff',
        name: 'Staff',
        rules: [{ attribute: 'email', operator: 'ends_with', values: ['@acme.test'] }],
      },
    })
    expect(segment.status).toBe(200)
    await putFlag(h, p.production, { key: 'gate', is_enabled: true })
    await putFlag(h, p.production, {
      key: 'greeting',
      is_enabled: true,
      flag_type: 'string',
      default_value: 'hello',
      disabled_value: 'off',
      prerequisites: [{ flag_key: 'gate' }],
      rules: [{ segment_key: 'staff', variant: 'hi colleague' }],
    })
    await putFlag(h, p.production, {
      key: 'color',
      is_enabled: true,
      flag_type: 'string',
      default_value: 'grey',
      variants: [
        { value: 'red', weight: 1 },
        { value: 'blue', weight: 1 },
      ],
    })
    return p
  }

  it('answers the published server provider with segments, prerequisites, variant names and a PATCH', async () => {
    const p = await seeded()
    const client = await ofrepClient(h.url, p.sdkKey)
    const staff = { targetingKey: 'u-1', email: 'ann@acme.test' }
    expect(await client.getStringDetails('greeting', 'x', staff)).toMatchObject({
      value: 'hi colleague',
      reason: 'TARGETING_MATCH',
      variant: 'hi colleague',
    })
    expect(await client.getStringDetails('greeting', 'x', { targetingKey: 'u-1', email: 'a@b.test' })).toMatchObject({
      value: 'hello',
      reason: 'DEFAULT',
    })
    const color = await client.getStringDetails('color', 'x', { targetingKey: 'u-1' })
    expect(color.reason).toBe('SPLIT')
    expect(color.variant).toBe(color.value) // a variant is named by its value
    expect(typeof color.flagMetadata.revision).toBe('number')
    expect(await client.getStringDetails('nope', 'x', staff)).toMatchObject({ value: 'x', errorCode: 'FLAG_NOT_FOUND' })
    expect(await client.getStringDetails('color', 'x', {})).toMatchObject({
      value: 'x',
      errorCode: 'TARGETING_KEY_MISSING',
    })

    expect((await flagsOf(h, p.production).patch('gate', { is_enabled: false })).status).toBe(200)
    expect(await client.getStringDetails('greeting', 'x', staff)).toMatchObject({ value: 'off', reason: 'DISABLED' })
  })

  it("evaluates the key's own environment only, with X-API-Key too, and refuses what is no SDK key", async () => {
    const p = await seeded()
    const stagingKey = await sdkKeyFor(h, p.id, p.staging)
    expect((await post('/evaluate/flags/gate', { context: {} }, stagingKey)).status).toBe(404)
    const viaHeader = await ofrepPost(
      `${h.url}/ofrep/v1/evaluate/flags/gate`,
      { context: {} },
      { 'X-API-Key': p.sdkKey },
    )
    expect(viaHeader).toMatchObject({ status: 200, body: { key: 'gate', value: true, reason: 'STATIC' } })
    const anonymous = await ofrepPost(`${h.url}/ofrep/v1/evaluate/flags`, { context: {} })
    expect(anonymous).toMatchObject({ status: 401, body: { code: 'unauthorized', errorCode: 'GENERAL' } })
    const token = await h.createToken(h.admin, 'read_only')
    expect((await post('/evaluate/flags', { context: {} }, token)).status).toBe(403)
    const malformed = await post('/evaluate/flags', '[', p.sdkKey)
    expect(malformed).toMatchObject({ status: 400, body: { errorCode: 'PARSE_ERROR', code: 'bad_request' } })
    const invalid = await post('/evaluate/flags/gate', { context: [1] }, p.sdkKey)
    expect(invalid).toMatchObject({ status: 400, body: { errorCode: 'INVALID_CONTEXT' } })
    const get = await fetch(`${h.url}/ofrep/v1/evaluate/flags/gate`, {
      headers: { Authorization: `Bearer ${p.sdkKey}` },
    })
    expect(get.status).toBe(405)
  })

  it('notifies only the environment a flag change touched, a segment change its project, 304 until then', async () => {
    const p = await seeded()
    const stagingKey = await sdkKeyFor(h, p.id, p.staging)
    await putFlag(h, p.staging, { key: 'gate', is_enabled: true })
    const context = { context: { targetingKey: 'u-1', email: 'ann@acme.test' } }
    const prod = await post('/evaluate/flags', context, p.sdkKey)
    const staging = await post('/evaluate/flags', context, stagingKey)
    const prodStream = await openRefresh(prod.body)
    const stagingStream = await openRefresh(staging.body)
    readers.push(prodStream, stagingStream)
    const etag = prod.headers.get('etag') as string
    expect((await post('/evaluate/flags', context, p.sdkKey, { 'If-None-Match': etag })).status).toBe(304)

    await putFlag(h, p.staging, { key: 'gate', is_enabled: false })
    await stagingStream.waitForCount(1)
    expect(prodStream.events).toEqual([]) // written in the same tick as staging's: none is coming
    expect((await post('/evaluate/flags', context, p.sdkKey, { 'If-None-Match': etag })).status).toBe(304)

    const renamed = await h.call(`/api/projects/${p.id}/segments/staff`, {
      method: 'PATCH',
      as: h.admin,
      body: { rules: [{ attribute: 'email', operator: 'ends_with', values: ['@other.test'] }] },
    })
    expect(renamed.status).toBe(200)
    await prodStream.waitForCount(1)
    const [event] = refetches(prodStream)
    expect(event).toMatchObject({ type: 'refetchEvaluation' })
    const after = await post(`/evaluate/flags?sseEtag=${event?.etag}`, context, p.sdkKey, { 'If-None-Match': etag })
    expect(after.status).toBe(200)
    expect(after.body.flags.find((f: { key: string }) => f.key === 'greeting')).toMatchObject({ value: 'hello' })
    // The segment belongs to the project: every environment of it that has providers re-fetches.
    await stagingStream.waitForCount(2)
    expect(refetches(stagingStream)[1]?.id).toBe(event?.id)
  })

  it('after a restart, re-fetches a resuming provider only if its own environment changed meanwhile', async () => {
    const p = await seeded()
    const stagingKey = await sdkKeyFor(h, p.id, p.staging)
    // The last change both providers saw; then only staging changes while they are away.
    const seen = Number((await putFlag(h, p.staging, { key: 'gate', is_enabled: true })).revision)
    expect(seen).toBeGreaterThan(0)
    await putFlag(h, p.staging, { key: 'gate', is_enabled: false })
    // A restarted server on the same database: it knows no scope's version but from the change log.
    const restarted = await startHarness(dialect, { databaseUrl: h.databaseUrl })
    try {
      const resume = (key: string) =>
        openSse(`${restarted.url}/ofrep/v1/events?key=${encodeURIComponent(key)}`, { 'Last-Event-ID': String(seen) })
      const prodStream = await resume(p.sdkKey)
      const stagingStream = await resume(stagingKey)
      readers.push(prodStream, stagingStream)
      expect([prodStream.status, stagingStream.status]).toEqual([200, 200])
      await stagingStream.waitForCount(1)
      expect(refetches(stagingStream)).toMatchObject([{ type: 'refetchEvaluation' }])
      // Production's stream opened first, with its first bytes: a re-fetch for it would be here by now.
      expect(prodStream.events).toEqual([])

      // A change to production after it resumed still reaches it.
      await putFlag(restarted, p.production, { key: 'gate', is_enabled: false })
      await prodStream.waitForCount(1)
      expect(refetches(prodStream)).toMatchObject([{ type: 'refetchEvaluation' }])
    } finally {
      for (const r of readers.splice(0)) r.close()
      await restarted.stop()
    }
  })
})
