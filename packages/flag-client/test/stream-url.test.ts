import { afterEach, describe, expect, it, vi } from 'vitest'
import { createFlagClient } from '../src/index.js'

afterEach(() => {
  vi.unstubAllGlobals()
})

describe('options.streamUrl', () => {
  it('a missing or malformed one is a TypeError naming the option, not a bare "Invalid URL"', () => {
    for (const streamUrl of [undefined, '', 'http://', 5]) {
      expect(() => createFlagClient({ streamUrl: streamUrl as string, persist: false })).toThrow(
        /^options\.streamUrl must be a URL \(got /,
      )
    }
    // Node has no page: a relative URL has nothing to resolve against.
    expect(() => createFlagClient({ streamUrl: '/stream', persist: false })).toThrow(/options\.streamUrl/)
  })

  it('in a page too, anything but a non-blank string is refused (not resolved to <page>/undefined)', () => {
    vi.stubGlobal('location', { href: 'https://app.example.com/console/index.html' })
    for (const streamUrl of [undefined, null, 123, {}, '', '   ']) {
      expect(() => createFlagClient({ streamUrl: streamUrl as string, persist: false })).toThrow(
        /^options\.streamUrl must be a URL \(got /,
      )
    }
  })

  it('a relative one resolves against the page, as EventSource does', async () => {
    vi.stubGlobal('location', { href: 'https://app.example.com/console/index.html' })
    const asked: string[] = []
    const flags = createFlagClient({
      streamUrl: '/stream',
      persist: false,
      fetch: async (input) => {
        asked.push(String(input))
        throw new TypeError('offline')
      },
    })
    try {
      await expect.poll(() => asked.length).toBeGreaterThan(0)
      expect(new URL(asked[0] as string).href).toBe('https://app.example.com/stream')
    } finally {
      await flags.close()
    }
  })
})
