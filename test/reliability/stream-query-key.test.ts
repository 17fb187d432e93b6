/**
 * The browser's own EventSource cannot send an Authorization header, so with
 * SDK_KEY set the flat API's /stream also takes the key as `?sdk_key=`. Tested
 * with the `eventsource` package (the EventSource API, as browsers have it):
 * no headers, only the URL.
 */

import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { EventSource } from 'eventsource'
import { afterEach, describe, expect, it } from 'vitest'

const KEY = 'sk_query_key_test'
const servers: TestServer[] = []
const sources: EventSource[] = []
afterEach(async () => {
  for (const s of sources.splice(0)) s.close()
  for (const s of servers.splice(0)) await s.dispose()
})

/** The first flag update, or the error status the source closed with. */
function firstUpdate(url: string): Promise<{ flag?: { key: string }; status?: number }> {
  const es = new EventSource(url)
  sources.push(es)
  return new Promise((resolve) => {
    es.addEventListener('update', (e) => resolve(JSON.parse(e.data) as { flag: { key: string } }))
    es.addEventListener('error', (e) => {
      es.close()
      resolve({ status: (e as { code?: number }).code })
    })
  })
}

describe('/stream with the SDK key in the query (EventSource)', () => {
  it('accepts ?sdk_key=<key>, refuses a wrong or missing one with 401, and a header still wins over the query', async () => {
    const server = await startTestServer({ sdkKey: KEY })
    servers.push(server)
    expect(
      (await server.request('/api/flags', { method: 'POST', body: { key: 'dark-mode', is_enabled: true } })).status,
    ).toBe(200)

    expect(await firstUpdate(`${server.url}/stream?sdk_key=${KEY}`)).toMatchObject({ flag: { key: 'dark-mode' } })
    expect(await firstUpdate(`${server.url}/stream?sdk_key=wrong`)).toEqual({ status: 401 })
    expect(await firstUpdate(`${server.url}/stream`)).toEqual({ status: 401 })

    const refused = await fetch(`${server.url}/stream?sdk_key=${KEY}`, { headers: { Authorization: 'Bearer wrong' } })
    expect(refused.status).toBe(401)
    expect(await refused.json()).toMatchObject({ code: 'unauthorized', error: 'invalid credentials' })
    const missing = await fetch(`${server.url}/stream`)
    expect(await missing.json()).toMatchObject({ error: expect.stringContaining('?sdk_key=<key>') })
    // Only the stream: the REST routes still need the header.
    expect((await fetch(`${server.url}/api/flags?sdk_key=${KEY}`)).status).toBe(401)
  })

  it('a repeated or empty ?sdk_key= is a 401 naming the parameter, with WWW-Authenticate', async () => {
    const server = await startTestServer({ sdkKey: KEY })
    servers.push(server)
    for (const query of [`?sdk_key=${KEY}&sdk_key=${KEY}`, '?sdk_key=']) {
      const res = await fetch(`${server.url}/stream${query}`)
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toBe('Bearer')
      expect(await res.json()).toMatchObject({ code: 'unauthorized', error: 'sdk_key must be one key' })
    }
  })
})
