import { request } from 'node:http'
import { DIALECTS } from '@flagsync/test-support/databases'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { afterEach, describe, expect, it } from 'vitest'

/** A PATCH with the actor header's bytes exactly as given (fetch would re-encode them). */
function patchWithActorBytes(url: string, actor: Buffer): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ description: 'x' })
    const req = request(`${url}/api/flags/f`, {
      method: 'PATCH',
      agent: false,
      // node:http writes header strings as Latin-1: one char per byte sends the bytes unchanged.
      headers: { 'Content-Type': 'application/json', 'X-Flagsync-Actor': actor.toString('latin1') },
    })
    req.on('response', (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => {
        text += c
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

describe.each(DIALECTS)('X-Flagsync-Actor on %s', (dialect) => {
  const servers: TestServer[] = []
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.dispose()))
  })
  async function start(): Promise<TestServer> {
    const server = await startTestServer({ dialect })
    servers.push(server)
    await server.request('/api/flags', { method: 'POST', body: { key: 'f', is_enabled: true } })
    return server
  }
  const declaredActors = async (s: TestServer) => {
    const page = await (await s.request('/api/flags/f/history')).json()
    return page.entries.map((e: { declaredActor: { name: string } | null }) => e.declaredActor?.name ?? null)
  }

  it('refuses raw non-ASCII bytes with a 422 naming the header, and records nothing', async () => {
    const s = await start()
    for (const raw of ['café', 'Zoë', 'ａｄｍｉｎ']) {
      const answer = await patchWithActorBytes(s.url, Buffer.from(raw, 'utf8'))
      expect(answer.status, raw).toBe(422)
      expect(answer.body).toMatchObject({
        code: 'validation_failed',
        error: expect.stringMatching(/^X-Flagsync-Actor must be ASCII: percent-encode/),
        issues: [{ path: 'headers.x-flagsync-actor' }],
      })
    }
    expect(await declaredActors(s)).toEqual([null])
  })

  it('refuses bidi, format and control characters after decoding', async () => {
    const s = await start()
    const cases = [
      '%E2%80%AEnimda', // U+202E RIGHT-TO-LEFT OVERRIDE: shows as "admin"
      'a%E2%80%AAb', // U+202A
      'a%E2%81%A6b%E2%81%A9', // U+2066 … U+2069 isolates
      'a%E2%80%8Eb', // U+200E LEFT-TO-RIGHT MARK
      'a%E2%80%8Fb', // U+200F
      'a%D8%9Cb', // U+061C ARABIC LETTER MARK
      'a%E2%80%8Bb', // U+200B ZERO WIDTH SPACE (format)
      'a%EF%BB%BFb', // U+FEFF
      'a%E2%80%A8b', // U+2028 LINE SEPARATOR
      'a%C2%85b', // U+0085 NEXT LINE (control)
      'a%0Ab', // newline
    ]
    for (const header of cases) {
      const res = await s.request('/api/flags/f', {
        method: 'PATCH',
        body: { description: 'x' },
        headers: { 'X-Flagsync-Actor': header },
      })
      expect(res.status, header).toBe(422)
      expect(await res.json()).toMatchObject({
        code: 'validation_failed',
        error: expect.stringMatching(/^X-Flagsync-Actor must be 1 to 256 printable characters/),
      })
    }
    expect(await declaredActors(s)).toEqual([null])
  })

  it('records percent-encoded names decoded: accents, other scripts and emoji', async () => {
    const s = await start()
    for (const name of ['café', 'Анна', '山田', 'Ada 😀', '100% sure']) {
      const header = name === '100% sure' ? name : encodeURIComponent(name)
      const res = await s.request('/api/flags/f', {
        method: 'PATCH',
        body: { description: name },
        headers: { 'X-Flagsync-Actor': header },
      })
      expect(res.status, name).toBe(200)
    }
    expect(await declaredActors(s)).toEqual(['100% sure', 'Ada 😀', '山田', 'Анна', 'café', null])
  })
})
