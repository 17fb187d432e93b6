/**
 * A connection that stays open but goes silent (the peer vanished without closing it) must not leave the provider
 * READY forever on a frozen flag set: past `idleTimeoutMs` without a byte, even a keep-alive, it counts as dropped.
 */
import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { FlagsyncServerProvider } from '@flagsync/server-provider'
import { OpenFeature, ProviderEvents, ProviderStatus } from '@openfeature/server-sdk'
import { afterEach, describe, expect, it } from 'vitest'

let server: Server | undefined
const responses: ServerResponse[] = []
afterEach(async () => {
  await OpenFeature.close()
  for (const res of responses.splice(0)) res.destroy()
  await new Promise((resolve) => server?.close(resolve))
})

/** A /stream that sends a one-flag bootstrap, then nothing at all; `connections` counts the requests. */
async function silentStream(): Promise<{ url: string; connections: () => number }> {
  let connections = 0
  server = createServer((_req, res) => {
    connections++
    responses.push(res)
    res.writeHead(200, { 'Content-Type': 'text/event-stream' })
    res.write('event: connected\nid:\ndata: true\n\n')
    res.write(
      `event: update\nid: 1\ndata: ${JSON.stringify({ type: 'UPSERT', flag: { key: 'on', is_enabled: true } })}\n\n`,
    )
    res.write(': bootstrap complete\n\n')
  })
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}/stream`, connections: () => connections }
}

describe('FlagsyncServerProvider on a silent stream', () => {
  it('goes STALE and reconnects once the stream has sent nothing for idleTimeoutMs, still answering', async () => {
    const stream = await silentStream()
    const provider = new FlagsyncServerProvider({
      streamUrl: stream.url,
      idleTimeoutMs: 300,
      reconnect: { baseMs: 100, jitter: 0 },
    })
    await OpenFeature.setProviderAndWait(provider)
    const of = OpenFeature.getClient()
    const events: string[] = []
    for (const type of [ProviderEvents.Ready, ProviderEvents.Stale]) of.addHandler(type, () => events.push(type))
    events.splice(0)
    await expect.poll(() => of.providerStatus, { timeout: 3000 }).toBe(ProviderStatus.STALE)
    expect(await of.getBooleanValue('on', false)).toBe(true)
    await expect.poll(() => stream.connections(), { timeout: 3000 }).toBe(2)
    await expect.poll(() => events.slice(0, 2)).toEqual([ProviderEvents.Stale, ProviderEvents.Ready])
  })
})
