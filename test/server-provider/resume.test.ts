/**
 * What the provider sends back as Last-Event-ID, against a scripted /stream: the id of the last event applied to a
 * complete flag set, never one from a bootstrap cut off halfway (its flags were never applied); and how long it
 * waits before reconnecting when the server's `retry:` asks for more than the backoff.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { FlagsyncServerProvider } from '@flagsync/server-provider'
import { OpenFeature, ProviderStatus } from '@openfeature/server-sdk'
import { afterEach, describe, expect, it } from 'vitest'

let server: Server | undefined
afterEach(async () => {
  await OpenFeature.close()
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve))
})

type Script = (res: ServerResponse, req: IncomingMessage) => void

/** A /stream answering its n-th request with `scripts[n]`; records each request's Last-Event-ID and time. */
async function scriptedStream(scripts: Script[]) {
  const requests: Array<{ lastEventId: string | undefined; at: number }> = []
  server = createServer((req, res) => {
    const header = req.headers['last-event-id']
    requests.push({ lastEventId: typeof header === 'string' ? header : undefined, at: Date.now() })
    res.writeHead(200, { 'Content-Type': 'text/event-stream' })
    const script = scripts[requests.length - 1]
    if (script) script(res, req)
    else res.write(': waiting\n\n')
  })
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}/stream`, requests }
}

const upsert = (id: number, key: string, is_enabled: boolean) =>
  `event: update\nid: ${id}\ndata: ${JSON.stringify({ type: 'UPSERT', flag: { key, is_enabled } })}\n\n`
const CONNECTED = 'event: connected\nid:\ndata: true\n\n'
const COMPLETE = ': bootstrap complete\n\n'

describe('FlagsyncServerProvider resuming a stream', () => {
  it('resumes from the last applied event, not from a bootstrap cut off halfway', async () => {
    const stream = await scriptedStream([
      // A complete bootstrap, a live update, then the connection ends.
      (res) => {
        res.write(CONNECTED + upsert(1, 'a', true) + upsert(2, 'b', true) + COMPLETE)
        setTimeout(() => res.end(upsert(3, 'a', false)), 50)
      },
      // A full bootstrap again (the server could not resume), cut off after its first flag.
      (res) => res.end(CONNECTED + upsert(4, 'c', true)),
    ])
    const provider = new FlagsyncServerProvider({ streamUrl: stream.url, reconnect: { baseMs: 20, jitter: 0 } })
    await OpenFeature.setProviderAndWait(provider)
    const of = OpenFeature.getClient()
    await expect.poll(() => stream.requests.length).toBe(3)
    expect(stream.requests.map((r) => r.lastEventId)).toEqual([undefined, '3', '3'])
    // The half bootstrap was not applied: the flags are those of the last complete set and its update.
    expect(await of.getBooleanValue('a', true)).toBe(false)
    expect(await of.getBooleanValue('b', false)).toBe(true)
    expect(await of.getBooleanDetails('c', false)).toMatchObject({ errorCode: 'FLAG_NOT_FOUND' })
    expect(of.providerStatus).toBe(ProviderStatus.STALE)
  })

  it('waits as long as the server’s retry: asks when that is longer than the backoff', async () => {
    const stream = await scriptedStream([
      (res) => res.end(`retry: 800\n\n${CONNECTED}${upsert(1, 'a', true)}${COMPLETE}`),
    ])
    const provider = new FlagsyncServerProvider({ streamUrl: stream.url, reconnect: { baseMs: 10, jitter: 0 } })
    await OpenFeature.setProviderAndWait(provider)
    await expect.poll(() => stream.requests.length, { timeout: 3000 }).toBe(2)
    const [first, second] = stream.requests
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(750)
  })
})
