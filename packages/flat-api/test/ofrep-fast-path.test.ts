import { createServer, type RequestListener, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createFlatApiApp } from '@flagsync/flat-api'
import { silentLogger } from '@flagsync/server-kit'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import type { Express } from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { withFastPath } from '../src/fast-path.js'

const KEY = 'fast-ofrep-key'
const BULK = '/ofrep/v1/evaluate/flags'

let server: TestServer
let front: Server | undefined
afterEach(async () => {
  await new Promise((resolve) => (front ? front.close(resolve) : resolve(undefined)))
  front = undefined
  await server.dispose()
})

/**
 * The server's own runtime behind `withFastPath` with an Express app that
 * records every request it is handed, so a test sees which path answered.
 */
async function startRecorded() {
  server = await startTestServer({ sdkKey: KEY })
  for (const flag of [
    { key: 'a-on', is_enabled: true },
    { key: 'b-pro', is_enabled: true, rules: [{ attribute: 'plan', operator: 'equals', values: ['pro'] }] },
    { key: 'c-split', is_enabled: true, rollout_percentage: 50 },
  ]) {
    expect((await server.request('/api/flags', { method: 'POST', body: flag })).status).toBe(200)
  }
  const app = createFlatApiApp({ runtime: server.runtime, sdkKey: KEY, logger: silentLogger() })
  const expressSaw: string[] = []
  const recorded: RequestListener = (req, res) => {
    expressSaw.push(`${req.method} ${req.url}`)
    app(req, res)
  }
  front = createServer(withFastPath(recorded as unknown as Express, { runtime: server.runtime, sdkKey: KEY }))
  await new Promise<void>((resolve) => front?.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(front.address() as AddressInfo).port}`
  const post = async (body: string, headers: Record<string, string> = {}, path = BULK) => {
    // A header given as '' is left out (to send X-API-Key without Authorization).
    const all = { 'Content-Type': 'application/json', Authorization: `Bearer ${KEY}`, ...headers }
    const sent = Object.fromEntries(Object.entries(all).filter(([, value]) => value !== ''))
    const res = await fetch(`${url}${path}`, { method: 'POST', headers: sent, body })
    const text = await res.text()
    const kept = [...res.headers].filter(([name]) => !['date', 'keep-alive', 'connection', 'vary'].includes(name))
    return { status: res.status, headers: Object.fromEntries(kept), text }
  }
  const streams: SseReader[] = []
  const events = async (query: string, headers: Record<string, string> = {}) => {
    const stream = await openSse(`${url}${EVENTS}${query}`, headers)
    streams.push(stream)
    return stream
  }
  closeStreams = () => {
    for (const stream of streams) stream.close()
  }
  return { expressSaw, post, events }
}

const EVENTS = '/ofrep/v1/events'
let closeStreams = () => {}
afterEach(() => {
  closeStreams()
  closeStreams = () => {}
})

/** A stream's headers but the ones a CORS request adds and the per-response ones. */
const sharedHeaders = (headers: Headers) =>
  Object.fromEntries(
    [...headers].filter(
      ([name]) => !name.startsWith('access-control-') && !['date', 'vary', 'connection', 'keep-alive'].includes(name),
    ),
  )

// An Origin header sends a request through Express (CORS); without it the fast path answers.
const viaExpress = { Origin: 'http://127.0.0.1' }

describe('OFREP bulk evaluation on the node:http fast path', () => {
  it('answers a well-formed bulk POST without Express, byte for byte as the OFREP router does', async () => {
    const { expressSaw, post } = await startRecorded()
    const body = JSON.stringify({ context: { targetingKey: 'u-7', plan: 'pro' } })
    const fast = await post(body)
    expect(expressSaw).toEqual([])
    const slow = await post(body, viaExpress)
    expect(expressSaw).toEqual([`POST ${BULK}`])
    expect(fast).toEqual(slow)
    expect(fast.status).toBe(200)
    const answer = JSON.parse(fast.text)
    expect(answer.flags.map((f: { key: string; reason: string }) => [f.key, f.reason])).toEqual([
      ['a-on', 'STATIC'],
      ['b-pro', 'TARGETING_MATCH'],
      ['c-split', 'SPLIT'],
    ])
    expect(answer.eventStreams[0].url).toMatch(/\/ofrep\/v1\/events\?key=fast-ofrep-key$/)
  })

  it('gives each of many concurrent requests the answer for its own context', async () => {
    const { expressSaw, post } = await startRecorded()
    const bodies = Array.from({ length: 40 }, (_, i) =>
      JSON.stringify({ context: { targetingKey: `u-${i}`, plan: i % 3 === 0 ? 'pro' : 'free' } }),
    )
    const fast = await Promise.all(bodies.map((body) => post(body)))
    expect(expressSaw).toEqual([])
    for (const [i, body] of bodies.entries()) expect(fast[i]).toEqual(await post(body, viaExpress))
  })

  it('takes X-API-Key as the key and answers a matching If-None-Match with the same 304', async () => {
    const { expressSaw, post } = await startRecorded()
    const body = JSON.stringify({ context: { targetingKey: 'u-1' } })
    const byApiKey = await post(body, { Authorization: '', 'X-API-Key': KEY })
    expect(byApiKey.status).toBe(200)
    expect(JSON.parse(byApiKey.text).eventStreams[0].url).toContain(`key=${KEY}`)
    const etag = byApiKey.headers.etag as string
    const fast304 = await post(body, { 'If-None-Match': etag })
    expect(expressSaw).toEqual([])
    const slow304 = await post(body, { 'If-None-Match': etag, ...viaExpress })
    expect(fast304.status).toBe(304)
    expect(fast304).toEqual(slow304)
  })

  it('hands every other request to Express with its body intact, so each refusal keeps its shape', async () => {
    const { expressSaw, post } = await startRecorded()
    const malformed = await post('{"context": ')
    expect(malformed.status).toBe(400)
    expect(JSON.parse(malformed.text)).toMatchObject({ code: 'bad_request', errorCode: 'PARSE_ERROR' })
    const invalid = await post(JSON.stringify({ context: { targetingKey: 7 } }))
    expect(invalid.status).toBe(400)
    expect(JSON.parse(invalid.text)).toEqual({
      error: 'context.targetingKey must be a string',
      code: 'bad_request',
      errorCode: 'INVALID_CONTEXT',
      errorDetails: 'context.targetingKey must be a string',
    })
    const wrongKey = await post('{}', { Authorization: 'Bearer nope' })
    expect(wrongKey.status).toBe(401)
    // A re-fetch names a version in the query: Express honours it (catching up first when it is newer).
    const refetch = await post(JSON.stringify({ context: { targetingKey: 'u-1' } }), {}, `${BULK}?flagConfigEtag=1`)
    expect(refetch.status).toBe(200)
    expect(expressSaw).toEqual([`POST ${BULK}`, `POST ${BULK}`, `POST ${BULK}`, `POST ${BULK}?flagConfigEtag=1`])
  })
})

describe('OFREP refresh streams on the node:http fast path', () => {
  it('opens a new stream without Express, with the headers Express sends, and tells it of every change', async () => {
    const { expressSaw, events } = await startRecorded()
    const fast = await events(`?key=${KEY}`)
    const viaRouter = await events(`?key=${KEY}`, viaExpress)
    expect(expressSaw).toEqual([`GET ${EVENTS}?key=${KEY}`])
    expect(fast.status).toBe(200)
    expect(sharedHeaders(fast.headers)).toEqual(sharedHeaders(viaRouter.headers))
    expect(fast.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'")

    const patched = await server.request('/api/flags/a-on', { method: 'PATCH', body: { is_enabled: false } })
    expect(patched.status).toBe(200)
    for (const stream of [fast, viaRouter]) {
      const refetch = await stream.waitFor((e) => e.data.includes('refetchEvaluation'))
      expect(refetch.event).toBe('message')
      expect(refetch.id).toBe(String(server.runtime.live.revision))
    }
  })

  it('takes the key from the Authorization header or X-API-Key as well as from ?key=', async () => {
    const { expressSaw, events } = await startRecorded()
    const byHeader = await events('', { Authorization: `Bearer ${KEY}` })
    const byApiKey = await events('', { 'X-API-Key': KEY })
    expect([byHeader.status, byApiKey.status]).toEqual([200, 200])
    expect(expressSaw).toEqual([])
  })

  it('leaves resumes, wrong, repeated and doubled keys to Express, which answers each in its one shape', async () => {
    const { expressSaw, events } = await startRecorded()
    const resumed = await events(`?key=${KEY}`, { 'Last-Event-ID': '1' })
    expect(resumed.status).toBe(200)
    const wrong = await events('?key=nope')
    const repeated = await events(`?key=${KEY}&key=${KEY}`)
    const doubled = await events('?key=nope', { Authorization: `Bearer ${KEY}` })
    expect([wrong.status, repeated.status]).toEqual([401, 401])
    expect(doubled.status).toBe(200)
    expect(expressSaw).toEqual([
      `GET ${EVENTS}?key=${KEY}`,
      `GET ${EVENTS}?key=nope`,
      `GET ${EVENTS}?key=${KEY}&key=${KEY}`,
      `GET ${EVENTS}?key=nope`,
    ])
  })
})
