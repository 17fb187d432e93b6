// @vitest-environment happy-dom

import type { Operation } from '@flagsync/protocol'
import { act, cleanup, renderHook } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import type { Outbox } from '../src/flag-write.js'
import { useQueuedEdits } from '../src/flags-panel-state.js'

afterEach(cleanup)

const toggle: Operation = {
  action: 'update',
  collection: 'flags',
  recordId: 'banner',
  changes: { is_enabled: true },
  baseRevision: 3,
}
const requested: Outbox = { write: async () => ({ kind: 'requested', id: 1 }) }
const tick = () => act(async () => new Promise((resolve) => setTimeout(resolve, 20)))

describe("the flags panel's outbox", () => {
  it('online, takes a write before the outbox opened and hands it over once it opens', async () => {
    const { result } = renderHook(() => useQueuedEdits(false))
    const outbox = result.current.outbox as Outbox
    let answer: unknown = null
    void outbox.write('prod', toggle, true).then((a) => {
      answer = a
    })
    await tick()
    expect(answer).toBeNull()
    act(() => result.current.onReady(requested))
    await tick()
    expect(answer).toEqual({ kind: 'requested', id: 1 })
  })

  it('offline, is null until the outbox opens (what cannot be queued says so)', () => {
    const { result } = renderHook(() => useQueuedEdits(true))
    expect(result.current.outbox).toBeNull()
    act(() => result.current.onReady(requested))
    expect(result.current.outbox).not.toBeNull()
  })

  it('answers a delivered write once the table no longer shows the edit as queued', async () => {
    const { result } = renderHook(() => useQueuedEdits(false))
    act(() => result.current.onReady(requested))
    act(() => result.current.onPending('prod', [toggle]))
    let answer: unknown = null
    void (result.current.outbox as Outbox).write('prod', toggle, true).then((a) => {
      answer = a
    })
    await tick()
    expect(answer).toBeNull()
    act(() => result.current.onPending('prod', []))
    await tick()
    expect(answer).toEqual({ kind: 'requested', id: 1 })
  })
})
