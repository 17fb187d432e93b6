import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

const read = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8')

/** The quoted members of a union written `'a'|'b'` or `'a' | 'b'`. */
const members = (union: string) => [...union.matchAll(/'([a-z]+)'/g)].map((m) => m[1]).sort()

describe('flag-client README', () => {
  it('lists every status state the type has', () => {
    const type = /state: ((?:'[a-z]+'\s*\|?\s*)+)/.exec(read('../src/types.ts'))?.[1]
    const readme = /`status\(\)` → `\{ state: ((?:'[a-z]+'\|?)+)/.exec(read('../README.md'))?.[1]
    expect(type).toBeDefined()
    expect(readme).toBeDefined()
    expect(members(readme ?? '')).toEqual(members(type ?? ''))
  })
})
