// @vitest-environment happy-dom

import { afterEach, describe, expect, it } from 'vitest'
import { readCached, writeCached } from '../src/local-cache.js'

afterEach(() => localStorage.clear())

describe('saved copies for offline visits', () => {
  it('reads back what was saved', () => {
    writeCached('flagsync.test', [{ id: 'a', name: 'Production' }])
    expect(readCached('flagsync.test')).toEqual([{ id: 'a', name: 'Production' }])
  })
  it('reads nothing where nothing, an empty string or broken JSON was saved', () => {
    expect(readCached('flagsync.none')).toBeUndefined()
    localStorage.setItem('flagsync.empty', '')
    expect(readCached('flagsync.empty')).toBeUndefined()
    localStorage.setItem('flagsync.broken', '{"half":')
    expect(readCached('flagsync.broken')).toBeUndefined()
  })
})
