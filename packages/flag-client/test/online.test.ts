import { browserOnlineSource, manualOnlineSource } from '@flagsync/flag-client'
import { afterEach, describe, expect, it, vi } from 'vitest'

afterEach(() => {
  vi.unstubAllGlobals()
})

describe('browserOnlineSource', () => {
  it('reads navigator.onLine when asked, and reports online where there is none (Node)', () => {
    const source = browserOnlineSource()
    expect(source.isOnline()).toBe(true)
    vi.stubGlobal('navigator', { onLine: false })
    expect(source.isOnline()).toBe(false)
    vi.stubGlobal('navigator', { onLine: true })
    expect(source.isOnline()).toBe(true)
  })

  it('listens to window online/offline events only while subscribed', () => {
    const target = new EventTarget()
    vi.stubGlobal('addEventListener', target.addEventListener.bind(target))
    vi.stubGlobal('removeEventListener', target.removeEventListener.bind(target))
    const seen: boolean[] = []
    const off = browserOnlineSource().subscribe((online) => seen.push(online))
    target.dispatchEvent(new Event('offline'))
    target.dispatchEvent(new Event('online'))
    off()
    target.dispatchEvent(new Event('offline'))
    expect(seen).toEqual([false, true])
  })
})

describe('manualOnlineSource', () => {
  it('notifies on changes only', () => {
    const source = manualOnlineSource(true)
    const seen: boolean[] = []
    const off = source.subscribe((online) => seen.push(online))
    source.setOnline(true)
    source.setOnline(false)
    expect(source.isOnline()).toBe(false)
    off()
    source.setOnline(true)
    expect(seen).toEqual([false])
  })
})
