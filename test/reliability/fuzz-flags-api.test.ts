import { connect } from 'node:net'
import { gzipSync } from 'node:zlib'
import { DIALECTS } from '@flagsync/test-support/databases'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  expectSafe,
  expectStreamMatchesStore,
  FUZZ_TIMEOUT_MS,
  type FuzzRequest,
  flagLike,
  hostileJsonText,
  oversized,
  pathSegment,
  runs,
  validFlag,
  validKey,
  wrongContentType,
} from './fuzz-support.js'
import { byKey, type ReliabilityServer, rawRequest, replayStream, startServer } from './harness.js'

/**
 * Hostile input at /api/flags: never a 5xx, a rejected request never changes the store, and the stream a
 * subscriber opened at the start carries exactly the accepted changes, framed so that every event parses.
 * One server per dialect; the properties share it, so state accumulates like in production.
 */

const json = (value: unknown) => JSON.stringify(value) as string | undefined

const flagsRequest: fc.Arbitrary<FuzzRequest> = fc.oneof(
  // Objects of every shape (mostly invalid) as JSON.
  fc.tuple(fc.constantFrom('POST', 'PATCH'), validKey, flagLike).map(([method, key, body]) => ({
    method,
    path: method === 'POST' ? '/api/flags' : `/api/flags/${key}`,
    contentType: 'application/json',
    body: json(body),
  })),
  // Valid flags with hostile text: accepted, and must reach the stream intact.
  validFlag.map((flag) => ({ method: 'POST', path: '/api/flags', contentType: 'application/json', body: json(flag) })),
  fc.tuple(validKey, validFlag).map(([key, { key: _key, ...patch }]) => ({
    method: 'PATCH',
    path: `/api/flags/${key}`,
    contentType: 'application/json',
    body: json(patch),
  })),
  // Raw JSON text: random JSON, deep nesting, duplicate keys, truncation, prototype keys.
  fc.tuple(fc.constantFrom('POST', 'PATCH'), validKey, hostileJsonText).map(([method, key, body]) => ({
    method,
    path: method === 'POST' ? '/api/flags' : `/api/flags/${key}`,
    contentType: 'application/json',
    body,
  })),
  // Hostile paths for every method.
  fc
    .tuple(fc.constantFrom('GET', 'PATCH', 'DELETE', 'POST', 'PUT'), pathSegment, fc.option(flagLike))
    .map(([method, segment, body]) => ({
      method,
      path: `/api/flags/${segment}`,
      contentType: 'application/json',
      body: body === null ? undefined : json(body),
    })),
  // Wrong or missing Content-Type, missing body.
  fc
    .tuple(fc.constantFrom('POST', 'PATCH'), validKey, fc.option(wrongContentType), fc.option(validFlag))
    .map(([method, key, contentType, body]) => ({
      method,
      path: method === 'POST' ? '/api/flags' : `/api/flags/${key}`,
      contentType: contentType ?? undefined,
      body: body === null ? undefined : json(body),
    })),
  // Raw bytes, usually not UTF-8.
  fc.uint8Array({ maxLength: 200 }).map((bytes) => ({
    method: 'POST',
    path: '/api/flags',
    contentType: 'application/json',
    body: Buffer.from(bytes),
  })),
  // Deletes of existing and missing flags.
  validKey.map((key) => ({ method: 'DELETE', path: `/api/flags/${key}` })),
)

describe.each(DIALECTS)('hostile input at /api/flags on %s', (dialect) => {
  let server: ReliabilityServer
  let stream: SseReader

  beforeAll(async () => {
    server = await startServer({ dialect })
    stream = await openSse(`${server.url}/stream`)
    await stream.waitForCount(1)
  })
  afterAll(async () => {
    stream?.close()
    await server?.dispose()
  })

  it(
    'random requests: never a 5xx, rejections change nothing',
    async () => {
      let accepted = 0
      await fc.assert(
        fc.asyncProperty(flagsRequest, async (req) => {
          const res = await expectSafe(server, req)
          if (res.status < 300 && req.method !== 'GET' && req.method !== 'DELETE') accepted++
        }),
        runs(200),
      )
      // The generators are not so hostile that nothing is ever accepted (which would make the stream check empty).
      expect(accepted).toBeGreaterThan(5)
    },
    FUZZ_TIMEOUT_MS,
  )

  it('bodies over the 1 MB limit are 413, whatever they contain', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('POST', 'PATCH'),
        validKey,
        oversized(1024 * 1024),
        async (method, key, body) => {
          const res = await expectSafe(server, {
            method,
            path: method === 'POST' ? '/api/flags' : `/api/flags/${key}`,
            contentType: 'application/json',
            body,
          })
          expect(res.status).toBe(413)
        },
      ),
      runs(8),
    )
  })

  it('duplicate JSON keys: the last one wins (JSON.parse), for the key as for any field', async () => {
    const raw = '{"key":"dup-first","is_enabled":"not a boolean","key":"dup-last","is_enabled":false}'
    const res = await expectSafe(server, {
      method: 'POST',
      path: '/api/flags',
      contentType: 'application/json',
      body: raw,
    })
    expect(res.status).toBe(200)
    expect(JSON.parse(res.body)).toMatchObject({ key: 'dup-last', is_enabled: false })
    expect((await server.request('/api/flags/dup-first')).status).toBe(404)
    const rejected = await expectSafe(server, {
      method: 'PATCH',
      path: '/api/flags/dup-last',
      contentType: 'application/json',
      body: '{"is_enabled":true,"is_enabled":"yes"}',
    })
    expect(rejected.status).toBe(422)
  })

  it('transport-level lies: Content-Length too short or too long, a body on GET, a chunked body', async () => {
    const before = await (await server.request('/api/flags')).text()
    const head = (length: number, extra = '') =>
      `POST /api/flags HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`
    const body = '{"key":"lied","is_enabled":true}'

    // Shorter than the body: the server parses the prefix (malformed JSON) and the rest is a bad next request.
    const short = await rawRequest(server.url, head(10) + body)
    expect(short.status).toBe(400)

    // Longer than the body, then the client gives up (half-close): no answer or a 4xx, never a write.
    const longer = await new Promise<string>((resolve) => {
      const socket = connect(server.port, '127.0.0.1', () => {
        socket.end(head(body.length + 100) + body)
      })
      let text = ''
      socket.on('data', (d) => {
        text += d
      })
      socket.on('close', () => resolve(text))
      socket.on('error', () => resolve(text))
    })
    expect(longer === '' || /^HTTP\/1\.1 4\d\d/.test(longer), longer).toBe(true)

    // A body on GET is ignored; a chunked body is read like any other.
    const get = await rawRequest(
      server.url,
      `GET /api/flags HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
    )
    expect(get.status).toBe(200)
    const chunk = '{"key":"chunked","is_enabled":"no"}'
    const chunked = await rawRequest(
      server.url,
      `POST /api/flags HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`,
    )
    expect(chunked.status).toBe(422)
    // Both Content-Length and chunked (request smuggling): refused by Node's parser.
    const smuggle = await rawRequest(
      server.url,
      `POST /api/flags HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    )
    expect(smuggle.status).toBe(400)
    expect(await (await server.request('/api/flags')).text()).toBe(before)
  })

  it('a gzip bomb is limited after inflating: 413, not memory exhaustion', async () => {
    const bomb = gzipSync(Buffer.from(`{"key":"k0","is_enabled":true,"description":"${' '.repeat(50 * 1024 * 1024)}"}`))
    expect(bomb.length).toBeLessThan(100 * 1024)
    const res = await rawRequest(
      server.url,
      Buffer.concat([
        Buffer.from(
          `POST /api/flags HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: ${bomb.length}\r\nConnection: close\r\n\r\n`,
        ),
        bomb,
      ]),
    )
    expect(res.status).toBe(413)
  })

  it('the stream carried exactly the accepted changes, each event intact', async () => {
    await expectStreamMatchesStore(server, stream)
    // A subscriber that connects now gets the same flags in its bootstrap.
    const late = await openSse(`${server.url}/stream`)
    try {
      const count = JSON.parse(await (await server.request('/api/flags')).text()).length
      const boot = await late.waitForCount(1 + count)
      expect(byKey(replayStream(boot).flags)).toEqual(JSON.parse(await (await server.request('/api/flags')).text()))
    } finally {
      late.close()
    }
    // A sanity check that the property really exercised the stream.
    expect(stream.events.length).toBeGreaterThan(5)
  })
})
