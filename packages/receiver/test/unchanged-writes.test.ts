import type { FlagChange } from '@flagsync/store'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, describe, expect, it } from 'vitest'
import { batch, closeAllHarnesses, flagsOf, fullFlag, insert, startHarness, update } from './harness.js'

afterEach(closeAllHarnesses)

describe.each(DIALECTS)('POST /sync: an operation that changes nothing, on %s', (dialect) => {
  async function start() {
    const committed: FlagChange[][] = []
    const h = await startHarness({ dialect, onCommit: (changes) => void committed.push(changes) })
    expect((await h.post(batch([insert('a', { is_enabled: true, description: 'x' })]))).body.applied).toBe(1)
    committed.length = 0
    return { h, committed }
  }

  it('is applied in the ack but writes nothing: no revision, no change, no onCommit; the batch id is kept', async () => {
    const { h, committed } = await start()
    const resend = batch([
      update('a', {}),
      update('a', { is_enabled: true, description: 'x' }),
      // With a base revision the insert reads the flag first, so an identical record is recognised too.
      { ...insert('a', fullFlag('a', { description: 'x' })), baseRevision: 1 },
    ])
    const reply = await h.post(resend)
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({ batchId: resend.batchId, applied: 3 })
    expect((await h.store.loadAll()).revision).toBe(1)
    expect(await h.store.changesSince(1)).toEqual([])
    expect(committed).toEqual([])
    // Recorded for dedupe: the replay is answered as a duplicate.
    expect((await h.post(resend)).body).toEqual({ batchId: resend.batchId, applied: 0, duplicate: true })
  })

  it('writes only the operations that change something in a mixed batch', async () => {
    const { h, committed } = await start()
    await h.post(batch([insert('b', { is_enabled: true })]))
    committed.length = 0
    const reply = await h.post(batch([update('a', { description: 'x' }), update('b', { is_enabled: false })]))
    expect(reply.body.applied).toBe(2)
    expect((await h.store.changesSince(2)).map((c) => [c.revision, c.key, c.flag?.is_enabled])).toEqual([
      [3, 'b', false],
    ])
    expect(committed.flat().map((c) => c.revision)).toEqual([3])
    expect(await flagsOf(h.store)).toEqual({
      a: fullFlag('a', { description: 'x' }),
      b: fullFlag('b', { is_enabled: false }),
    })
  })
})
