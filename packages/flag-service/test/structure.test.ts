import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const SRC = fileURLToPath(new URL('../src', import.meta.url))

/** A router file: `routes.ts`, `route.ts`, `<name>-routes.ts`, `<name>-route.ts`, or any name containing `router`. */
const ROUTER_FILE = /(?:^|-)routes?\.ts$|router/

/**
 * Raw SQL building: a call of `knex(…)` or `trx(…)` (a query on a table), or of any
 * `.where…(…)` method (`where`, `whereIn`, `whereNot`, `whereRaw`, …). Routers call the
 * query functions of their resource's `queries.ts` (or `rows.ts`) instead.
 */
const RAW_KNEX = /\b(?:knex|trx)\s*\(|\.where[A-Za-z]*\s*\(/

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  )
}

/** The code lines of a file that build SQL, as `path:line: code` (comment lines are not code). */
function rawKnexLines(file: string): string[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((line, i) => {
      const code = line.trim()
      if (code.startsWith('//') || code.startsWith('*') || code.startsWith('/*')) return []
      return RAW_KNEX.test(code) ? [`${relative(SRC, file)}:${i + 1}: ${code}`] : []
    })
}

describe('the flag service source layout', () => {
  const routers = sourceFiles(SRC).filter((file) => ROUTER_FILE.test(file.split('/').pop() ?? ''))

  it('finds the routers of every resource folder', () => {
    const names = routers.map((file) => relative(SRC, file))
    expect(names).toEqual(expect.arrayContaining(['environments/routes.ts', 'projects/routes.ts', 'users/routes.ts']))
  })

  it('has no raw knex in a router: routers call their resource’s query functions', () => {
    expect(routers.flatMap(rawKnexLines)).toEqual([])
  })

  it('flags a router line that builds SQL', () => {
    expect(RAW_KNEX.test("await trx(T.users).where('id', id).delete()")).toBe(true)
    expect(RAW_KNEX.test('const q = knex(D)')).toBe(true)
    expect(RAW_KNEX.test('query.whereIn(ids)')).toBe(true)
    expect(RAW_KNEX.test('await deleteUser(trx, id)')).toBe(false)
    expect(RAW_KNEX.test('await runtime.write((trx) => insertToken(trx, record), undefined, req)')).toBe(false)
  })
})
