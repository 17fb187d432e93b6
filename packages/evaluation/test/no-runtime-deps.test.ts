import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

const src = new URL('../src/', import.meta.url)
const ZOD_FREE = ['@flagsync/protocol/json-equal']

describe('@flagsync/evaluation', () => {
  // The evaluator ships to browsers: importing a value from @flagsync/protocol's
  // index would pull zod into every bundle, so only types may come from there,
  // and values only from its zod-free entries (they import nothing).
  it('imports nothing at run time but its own files and zod-free protocol entries', () => {
    for (const entry of ZOD_FREE) {
      const file = new URL(`../../protocol/src/${entry.split('/').pop()}.ts`, import.meta.url)
      expect(readFileSync(file, 'utf8'), entry).not.toMatch(/^(?:import|export)\s+(?!type\s)[^'"]*from\s/m)
    }
    const files = readdirSync(src).filter((name) => name.endsWith('.ts'))
    expect(files.length).toBeGreaterThan(5)
    for (const name of files) {
      const text = readFileSync(new URL(name, src), 'utf8')
      for (const match of text.matchAll(/^(?:import|export)\s+(type\s+)?[^'"]*from\s+'([^']+)'/gm)) {
        const [, typeOnly, specifier = ''] = match
        if (!specifier.startsWith('./') && !ZOD_FREE.includes(specifier))
          expect(typeOnly, `${name} imports a value from ${specifier}`).toBeDefined()
      }
    }
  })
})
