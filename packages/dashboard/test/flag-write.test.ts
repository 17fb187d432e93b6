// @vitest-environment happy-dom

import { afterEach, describe, expect, it, vi } from 'vitest'
import { flagWriter } from '../src/flag-write.js'
import type { Outbox } from '../src/offline-edits.js'

afterEach(() => vi.unstubAllGlobals())

function recordingOutbox() {
  const ops: unknown[][] = []
  const outbox: Outbox = {
    update: async (...args) => void ops.push(['update', ...args]),
    insert: async (...args) => void ops.push(['insert', ...args]),
    delete: async (...args) => void ops.push(['delete', ...args]),
  }
  return { outbox, ops }
}

describe('the flag writer: one path for every flag write', () => {
  it('queued, an update is an outbox operation with the revision seen as its base, and nothing is fetched', async () => {
    const fetch = vi.fn()
    vi.stubGlobal('fetch', fetch)
    const { outbox, ops } = recordingOutbox()
    const writer = flagWriter({ queued: true, outbox })
    expect(await writer.update('prod', 'checkout', { is_enabled: true }, 7)).toEqual({ kind: 'queued' })
    await writer.remove('prod', 'checkout', 8)
    expect(ops).toEqual([
      ['update', 'prod', 'checkout', { is_enabled: true }, 7],
      ['delete', 'prod', 'checkout', 8],
    ])
    expect(fetch).not.toHaveBeenCalled()
  })

  it('queued without an open outbox, says that saving needs a connection', async () => {
    const writer = flagWriter({ queued: true, outbox: null })
    await expect(writer.update('prod', 'checkout', { is_enabled: true }, 7)).rejects.toThrow(
      'Saving needs a connection: the outbox that queues edits offline is not open.',
    )
  })

  it("online, a PATCH an approval environment answers with a change request comes back as that request's number", async () => {
    vi.stubGlobal('fetch', async () => new Response(JSON.stringify({ id: 4, status: 'pending' }), { status: 202 }))
    const writer = flagWriter({ queued: false, outbox: null })
    expect(await writer.update('prod', 'checkout', { is_enabled: true }, 7)).toEqual({ kind: 'requested', id: 4 })
  })
})
