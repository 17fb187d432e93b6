import { afterEach, describe, expect, it, vi } from 'vitest'
import { randomId } from '../src/random-id.js'

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe('randomId', () => {
  afterEach(() => {
    vi.unstubAllGlobals()
  })

  it('is crypto.randomUUID where the page is a secure context', () => {
    expect(randomId()).toMatch(V4)
  })

  it('builds a v4 UUID from getRandomValues on a plain-http page (no randomUUID)', () => {
    const real = globalThis.crypto
    let calls = 0
    vi.stubGlobal('crypto', {
      getRandomValues: <T extends ArrayBufferView>(bytes: T): T => {
        calls++
        return real.getRandomValues(bytes as unknown as Uint8Array) as unknown as T
      },
    })
    const ids = new Set(Array.from({ length: 1000 }, () => randomId()))
    expect(calls).toBe(1000)
    expect(ids.size).toBe(1000)
    for (const id of ids) expect(id).toMatch(V4)
  })
})
