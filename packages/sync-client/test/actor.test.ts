import { afterEach, describe, expect, it } from 'vitest'
import { harness, ModelReceiver, useMockServer } from './helpers.js'

const server = useMockServer()
let h = harness()

afterEach(async () => {
  await h.closeAll()
  h = harness()
})

describe('actor option', () => {
  it('stamps the configured actor, percent-encoded, on every batch as X-Flagsync-Actor', async () => {
    const receiver = new ModelReceiver()
    server.use(receiver.handler)
    const client = h.client({ actor: 'Zoë Müller', batchSize: 1, headers: { 'X-App': 'demo' } })
    await client.insert('flags', { key: 'a', is_enabled: true }, { recordId: 'a' })
    await client.insert('flags', { key: 'b', is_enabled: true }, { recordId: 'b' })
    expect(await client.flush()).toEqual({ delivered: 2, pending: 0 })
    expect(receiver.requests.map((r) => r.headers.get('x-flagsync-actor'))).toEqual([
      'Zo%C3%AB%20M%C3%BCller',
      'Zo%C3%AB%20M%C3%BCller',
    ])
    expect(receiver.requests[0]?.headers.get('x-app')).toBe('demo')
  })

  it('sends no actor header without the option, and refuses an empty or overlong actor', async () => {
    const receiver = new ModelReceiver()
    server.use(receiver.handler)
    const client = h.client()
    await client.insert('flags', { key: 'a', is_enabled: true }, { recordId: 'a' })
    await client.flush()
    expect(receiver.requests[0]?.headers.has('x-flagsync-actor')).toBe(false)
    expect(() => h.client({ actor: '' })).toThrow(/actor/)
    expect(() => h.client({ actor: 'x'.repeat(257) })).toThrow(/actor/)
  })
})
