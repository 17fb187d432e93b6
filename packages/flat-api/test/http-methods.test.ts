import { request } from 'node:http'
import { DIALECTS } from '@flagsync/test-support/databases'
import { openSse } from '@flagsync/test-support/sse-reader'
import { streamServers } from '@flagsync/test-support/stream-servers'
import { describe, expect, it } from 'vitest'

const KEY = 'sk_test_methods'

interface Head {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** A HEAD on its own connection; rejects if no complete answer comes within `ms` (a HEAD held open as a stream). */
function head(url: string, path: string, ms = 3000): Promise<Head> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method: 'HEAD', agent: false, headers: { Authorization: `Bearer ${KEY}` } })
    const timer = setTimeout(() => {
      req.destroy()
      reject(new Error(`HEAD ${path}: no complete answer within ${ms} ms`))
    }, ms)
    req.on('response', (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        body += chunk
      })
      res.on('end', () => {
        clearTimeout(timer)
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body })
      })
    })
    req.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    req.end()
  })
}

describe.each(DIALECTS)('HTTP methods on the flat API (%s)', (dialect) => {
  const { start, readers } = streamServers(dialect, { env: { SDK_KEY: KEY } })

  it('HEAD /stream answers the stream headers at once, with no body, and never takes a stream slot', async () => {
    const server = await start({ maxStreamConnections: 2 })
    // Two HEADs in flight together, at the cap of 2: each is answered and ends.
    const heads = await Promise.all([head(server.url, '/stream'), head(server.url, '/stream')])
    for (const answer of heads) {
      expect(answer.status).toBe(200)
      expect(answer.headers['content-type']).toBe('text/event-stream; charset=utf-8')
      expect(answer.body).toBe('')
    }
    expect(server.runtime.hub.size()).toBe(0)
    // Both slots are still free: two GETs stream.
    for (let i = 0; i < 2; i++) {
      const stream = await openSse(`${server.url}/stream`, { Authorization: `Bearer ${KEY}` })
      readers.push(stream)
      expect(stream.status).toBe(200)
      await stream.waitForCount(1)
    }
    expect(server.runtime.hub.size()).toBe(2)
    // HEAD with Last-Event-ID (the Express path) is answered the same way.
    const resumed = await new Promise<Head>((resolve, reject) => {
      const req = request(`${server.url}/stream`, {
        method: 'HEAD',
        agent: false,
        headers: { Authorization: `Bearer ${KEY}`, 'Last-Event-ID': '0' },
      })
      req.on('response', (res) => {
        res.resume()
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' }))
      })
      req.on('error', reject)
      req.setTimeout(3000, () => req.destroy(new Error('HEAD with Last-Event-ID hung')))
      req.end()
    })
    // At the cap a HEAD is told what a GET would be, and still takes nothing.
    expect(resumed.status).toBe(503)
    expect(server.runtime.hub.size()).toBe(2)
  })

  it('HEAD /stream without the key is a 401, like GET', async () => {
    const server = await start()
    const answer = await new Promise<number>((resolve, reject) => {
      const req = request(`${server.url}/stream`, { method: 'HEAD', agent: false })
      req.on('response', (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      req.on('error', reject)
      req.end()
    })
    expect(answer).toBe(401)
  })

  it.each([
    ['POST', '/stream', 'GET, HEAD'],
    ['PUT', '/stream', 'GET, HEAD'],
    ['DELETE', '/stream', 'GET, HEAD'],
    ['PUT', '/health', 'GET, HEAD'],
    ['POST', '/health', 'GET, HEAD'],
    ['PUT', '/api/flags', 'GET, POST'],
    ['PUT', '/api/flags/x', 'GET, PATCH, DELETE'],
    ['GET', '/sync', 'POST'],
  ])('%s %s is a 405 JSON with Allow: %s', async (method, path, allow) => {
    const server = await start()
    const res = await server.request(path, { method })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe(allow)
    expect(await res.json()).toMatchObject({ code: 'method_not_allowed' })
  })

  it('a wrong method on /stream without the key is a 401 first, and an unknown path stays a 404', async () => {
    const server = await start()
    const unauthorized = await fetch(`${server.url}/stream`, { method: 'POST' })
    expect(unauthorized.status).toBe(401)
    const unknown = await server.request('/nowhere', { method: 'PUT' })
    expect(unknown.status).toBe(404)
  })
})
