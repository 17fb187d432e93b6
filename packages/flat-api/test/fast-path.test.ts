import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { afterEach, describe, expect, it } from 'vitest'

let server: TestServer
afterEach(async () => {
  await server.dispose()
})

// An Origin header sends a request through Express (CORS); without it the fast path answers.
const viaExpress = { Origin: 'http://127.0.0.1' }
const comparable = (res: Response) => {
  const headers = Object.fromEntries(
    [...res.headers].filter(([name]) => !['date', 'keep-alive', 'connection', 'vary'].includes(name)),
  )
  return { status: res.status, headers }
}

describe('the node:http fast path', () => {
  it('answers list and get exactly as Express would: body, status and headers', async () => {
    server = await startTestServer({ sdkKey: 'k' })
    await server.request('/api/flags', { method: 'POST', body: { key: 'a', is_enabled: true, description: 'x\ny' } })
    for (const path of ['/api/flags', '/api/flags/a']) {
      const fast = await server.request(path)
      const slow = await server.request(path, { headers: viaExpress })
      expect(comparable(fast), path).toEqual(comparable(slow))
      expect(await fast.text()).toBe(await slow.text())
    }
    const etag = (await server.request('/api/flags')).headers.get('etag') as string
    const fast304 = await server.request('/api/flags', { headers: { 'If-None-Match': etag } })
    const slow304 = await server.request('/api/flags', { headers: { 'If-None-Match': etag, ...viaExpress } })
    expect(comparable(fast304)).toEqual(comparable(slow304))
  })

  it('reads If-None-Match the same way on both paths: weak tags, lists and * are a 304, others a 200', async () => {
    server = await startTestServer({ sdkKey: 'k' })
    await server.request('/api/flags', { method: 'POST', body: { key: 'a', is_enabled: true } })
    const etag = (await server.request('/api/flags')).headers.get('etag') as string
    const forms: Array<[string, number]> = [
      [etag, 304],
      [`W/${etag}`, 304],
      [`"x", ${etag}`, 304],
      [`"x",W/${etag}`, 304],
      ['*', 304],
      ['"x"', 200],
      [`"x" ${etag}`, 200],
    ]
    for (const [header, status] of forms) {
      const fast = await server.request('/api/flags', { headers: { 'If-None-Match': header } })
      const slow = await server.request('/api/flags', { headers: { 'If-None-Match': header, ...viaExpress } })
      expect(fast.status, `fast path, If-None-Match: ${header}`).toBe(status)
      expect(slow.status, `Express, If-None-Match: ${header}`).toBe(status)
      expect(comparable(fast)).toEqual(comparable(slow))
      await Promise.all([fast.arrayBuffer(), slow.arrayBuffer()])
    }
  })

  it('answers from prepared bytes that follow every change: a flag, the list and its ETag', async () => {
    server = await startTestServer({ sdkKey: 'k' })
    await server.request('/api/flags', { method: 'POST', body: { key: 'a', is_enabled: true } })
    const before = await server.request('/api/flags/a')
    expect(await before.json()).toMatchObject({ key: 'a', is_enabled: true })
    const listBefore = await server.request('/api/flags')
    const etag = listBefore.headers.get('etag') as string
    await listBefore.arrayBuffer()
    await server.request('/api/flags/a', { method: 'PATCH', body: { is_enabled: false, description: 'longer now' } })
    const after = await server.request('/api/flags/a')
    const text = await after.text()
    expect(JSON.parse(text)).toMatchObject({ key: 'a', is_enabled: false, description: 'longer now' })
    expect(after.headers.get('content-length')).toBe(String(Buffer.byteLength(text)))
    const listAfter = await server.request('/api/flags')
    expect(listAfter.headers.get('etag')).not.toBe(etag)
    expect(await listAfter.json()).toEqual([JSON.parse(text)])
    // The old ETag no longer matches: a full 200, not a 304.
    expect((await server.request('/api/flags', { headers: { 'If-None-Match': etag } })).status).toBe(200)
    await server.request('/api/flags/a', { method: 'DELETE' })
    expect((await server.request('/api/flags/a')).status).toBe(404)
  })

  it('leaves every error to Express: 401, 404 and malformed escapes keep their JSON shape', async () => {
    server = await startTestServer({ sdkKey: 'k' })
    const unauthorized = await fetch(`${server.url}/api/flags`)
    expect(unauthorized.status).toBe(401)
    expect(await unauthorized.json()).toMatchObject({ code: 'unauthorized' })
    const missing = await server.request('/api/flags/nope')
    expect(missing.status).toBe(404)
    expect(await missing.json()).toMatchObject({ code: 'not_found' })
    expect((await server.request('/api/flags/%E0%A4%A')).status).toBe(400)
    const streamDenied = await fetch(`${server.url}/stream`)
    expect(streamDenied.status).toBe(401)
  })
})
