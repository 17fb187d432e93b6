import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

const src = new URL('../src/', import.meta.url)

describe('@flagsync/evaluation', () => {
  // The evaluator ships to browsers: importing a value from @flagsync/protocol
  // would pull zod into every bundle, so only types may come from there.
  it('imports nothing at run time but its own files', () => {
    const files = readdirSync(src).filter((name) => name.endsWith('.ts'))
    expect(files.length).toBeGreaterThan(5)
    for (const name of files) {
      const text = readFileSync(new URL(name, src), 'utf8')
      for (const match of text.matchAll(/^(?:import|export)\s+(type\s+)?[^'"]*from\s+'([^']+)'/gm)) {
        const [, typeOnly, specifier = ''] = match
        if (!specifier.startsWith('./')) expect(typeOnly, `${name} imports a value from ${specifier}`).toBeDefined()
      }
    }
  })
})
