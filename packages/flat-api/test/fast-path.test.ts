import { afterEach, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../../../test/support/test-server.js'

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
