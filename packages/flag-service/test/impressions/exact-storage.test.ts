import { DIALECTS } from '@flagsync/test-support/databases'
import { describe, expect, it } from 'vitest'
import { IMPRESSION_LIMITS, IMPRESSION_TABLES as T } from '../../src/impressions/tables.js'
import { impressionSuite } from './fixture.js'

// A full batch of awkward values goes through ingest and comes back exactly: every text a PostgreSQL array
// literal or a JSON document could mangle (quotes, backslashes, braces, commas, the word NULL, empty strings,
// line breaks, non-BMP characters), absent and null optional fields, and the counters they add up to.

const FLAGS = ['odd-a', 'odd_b', 'ODD-C', 'odd-d-with-a-longer-key']
const VALUES = [
  'true',
  'false',
  '',
  'NULL',
  '{}',
  '{"a":1}',
  'a,b',
  'say "hi"',
  'back\\slash',
  '\\',
  '"',
  'line\nbreak\ttab',
  ' padded ',
  'ünïcødé 🚀',
]
const USERS = [
  null,
  undefined,
  'u"quote',
  'back\\slash',
  'NULL',
  '{braces}',
  'comma,user',
  '🚀 rocket',
  'ü',
  ' leading space',
  'x'.repeat(IMPRESSION_LIMITS.userIdLength),
]
const CONTEXTS = [
  null,
  undefined,
  {},
  { quote: 'a"b', back: 'c\\d', braces: '{x,y}', nested: { list: [1, 'two', null, true] } },
  { emoji: '🚀', accents: 'ünïcødé', lines: 'a\nb\r\n', word: 'NULL', empty: '' },
]
const TIMES = [undefined, null, '2025-12-31T23:59:59.999Z', '2025-06-01T12:00:00+02:00', '1970-01-01T00:00:00Z']

/** 500 impressions cycling through every awkward field at co-prime periods, so the combinations vary. */
function awkwardBatch(): Array<Record<string, unknown>> {
  return Array.from({ length: IMPRESSION_LIMITS.batch }, (_, i) => {
    const item: Record<string, unknown> = {
      flag_key: FLAGS[i % FLAGS.length],
      value: VALUES[i % VALUES.length],
    }
    const user = USERS[i % USERS.length]
    const context = CONTEXTS[i % CONTEXTS.length]
    const at = TIMES[i % TIMES.length]
    if (user !== undefined) item.user_id = user
    if (context !== undefined) item.context = context
    if (at !== undefined) item.evaluated_at = at
    return item
  })
}

interface StoredRow {
  flag_key: string
  user_id: string | null
  value: string
  context: string | null
  evaluated_at: number
}

describe.each(DIALECTS)('a full batch of awkward values on %s', (dialect) => {
  const { fx } = impressionSuite(dialect)

  /** The environment's rows in id order, names resolved. */
  const storedRows = async (): Promise<StoredRow[]> => {
    const knex = fx().h.server.runtime.knex
    const rows = (await knex({ i: T.impressions })
      .join({ e: T.envs }, 'e.id', 'i.env_id')
      .join({ fl: T.flags }, 'fl.id', 'i.flag_id')
      .join({ v: T.values }, 'v.id', 'i.value_id')
      .where('e.environment_id', fx().envId)
      .orderBy('i.id')
      .select('fl.flag_key', 'i.user_id', 'v.value', 'i.context', 'i.evaluated_at')) as Array<
      StoredRow & { evaluated_at: number | string }
    >
    return rows.map((r) => ({ ...r, evaluated_at: Number(r.evaluated_at) }))
  }

  it('stores every value as sent, in the order sent, and counts each once', async () => {
    const items = awkwardBatch()
    const receivedAt = fx().h.clock.now
    const expected = items.map((item) => ({
      flag_key: item.flag_key,
      user_id: item.user_id ?? null,
      value: item.value,
      context: item.context === undefined || item.context === null ? null : JSON.stringify(item.context),
      evaluated_at: typeof item.evaluated_at === 'string' ? Date.parse(item.evaluated_at) : receivedAt,
    }))

    expect((await fx().post(items)).status).toBe(204)
    expect(await storedRows()).toEqual(expected)
    // The same batch again: rows twice, users still counted once.
    expect((await fx().post(items)).status).toBe(204)
    expect(await storedRows()).toEqual([...expected, ...expected])

    const byValue = (a: { value: string }, b: { value: string }) => (a.value < b.value ? -1 : a.value > b.value ? 1 : 0)
    const stats = (await fx().stats()).body as Array<{ values: Array<{ value: string; count: number }> }>
    expect(stats.map((entry) => ({ ...entry, values: [...entry.values].sort(byValue) }))).toEqual(
      [...FLAGS].sort().map((flag) => {
        const mine = expected.filter((e) => e.flag_key === flag)
        const counts = new Map<string, number>()
        for (const e of mine) counts.set(e.value as string, (counts.get(e.value as string) ?? 0) + 2)
        return {
          flag_key: flag,
          total: 2 * mine.length,
          true_count: 2 * mine.filter((e) => e.value === 'true').length,
          false_count: 2 * mine.filter((e) => e.value === 'false').length,
          unique_users: new Set(mine.flatMap((e) => (e.user_id === null ? [] : [e.user_id]))).size,
          last_seen: new Date(Math.max(...mine.map((e) => e.evaluated_at))).toISOString(),
          values: [...counts].map(([value, count]) => ({ value, count })).sort(byValue),
        }
      }),
    )

    const total = async (query: string) => (await fx().list(query)).body.total
    expect(await total('')).toBe(2 * IMPRESSION_LIMITS.batch)
    expect(await total(`value=${encodeURIComponent('say "hi"')}`)).toBe(
      2 * expected.filter((e) => e.value === 'say "hi"').length,
    )
    expect(await total(`user_id=${encodeURIComponent('back\\slash')}`)).toBe(
      2 * expected.filter((e) => e.user_id === 'back\\slash').length,
    )
    expect(await total(`flag_key=odd_b&value=${encodeURIComponent('ünïcødé 🚀')}`)).toBe(
      2 * expected.filter((e) => e.flag_key === 'odd_b' && e.value === 'ünïcødé 🚀').length,
    )
  })
})
