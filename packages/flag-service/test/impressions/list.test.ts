import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anonymous, bearer, T0 } from '../harness.js'
import { type ImpressionFixture, startImpressionFixture } from './fixture.js'

interface Item {
  id: number
  flag_key: string
  user_id: string | null
  value: string
  context: Record<string, unknown> | null
  evaluated_at: string
}

const N = 260

/** 260 impressions over two flags, 7 users (and anonymous ones), two values per flag. */
function dataset() {
  return Array.from({ length: N }, (_, i) => {
    const alpha = i % 2 === 0
    return {
      flag_key: alpha ? 'alpha' : 'beta',
      user_id: i % 13 === 0 ? null : `u${i % 7}`,
      value: alpha ? (i % 3 === 0 ? 'false' : 'true') : i % 5 === 0 ? 'blue' : 'green',
      context: i % 4 === 0 ? { i } : null,
      evaluated_at: new Date(T0 + i * 1000).toISOString(),
    }
  })
}

describe.each(DIALECTS)('GET …/impressions on %s', (dialect) => {
  let f: ImpressionFixture
  /** The stored rows as the API shows them, oldest first. */
  let all: Item[]
  beforeAll(async () => {
    f = await startImpressionFixture(dialect)
    const data = dataset()
    // Two requests, so ids and the counters span batches.
    expect((await f.post(data.slice(0, 130))).status).toBe(204)
    expect((await f.post(data.slice(130))).status).toBe(204)
    // Noise in another environment must never show up.
    expect((await f.post(data.slice(0, 40), f.stagingKey, f.stagingId)).status).toBe(204)
    const first = await f.list('since_id=0&limit=1')
    const firstId = first.body.items[0].id as number
    all = data.map((d, i) => ({ id: firstId + i, ...d }))
  })
  afterAll(async () => {
    await f?.dispose()
  })

  const newestFirst = (items: Item[]) => [...items].reverse()
  const where = (pred: (i: Item) => boolean) => all.filter(pred)

  it('answers the newest 50 by default, with the total of the environment', async () => {
    const res = await f.list()
    expect(res.status).toBe(200)
    expect(Object.keys(res.body).sort()).toEqual(['items', 'total'])
    expect(res.body.total).toBe(N)
    expect(res.body.items).toEqual(newestFirst(all).slice(0, 50))
  })

  it('pages with limit 1 to 200 and offset', async () => {
    expect((await f.list('limit=200')).body.items).toEqual(newestFirst(all).slice(0, 200))
    expect((await f.list('limit=1')).body.items).toEqual(newestFirst(all).slice(0, 1))
    const page = await f.list('limit=20&offset=250')
    expect(page.body).toEqual({ items: newestFirst(all).slice(250), total: N })
    expect((await f.list('offset=1000')).body).toEqual({ items: [], total: N })
  })

  it('answers 422 for a limit outside 1 to 200 and other malformed parameters, naming them', async () => {
    for (const q of ['limit=0', 'limit=201', 'limit=-1', 'limit=1.5', 'limit=abc', 'limit=', 'limit=1&limit=2']) {
      const res = await f.list(q)
      expect({ q, status: res.status, path: res.body.issues?.[0]?.path }).toEqual({ q, status: 422, path: 'limit' })
    }
    expect((await f.list('limit=0')).body.issues[0].message).toBe('must be a whole number from 1 to 200')
    for (const [q, path] of [
      ['offset=-5', 'offset'],
      ['since_id=x', 'since_id'],
      ['flag_key=no%20spaces', 'flag_key'],
      ['user_id=', 'user_id'],
      ['flagKey=alpha', 'flagKey'],
      // PostgreSQL text cannot hold NUL: a filter with one is a 422 on both dialects, never a driver error.
      ['value=x%00y', 'value'],
      ['user_id=a%00b', 'user_id'],
    ]) {
      const res = await f.list(q)
      expect({ q, status: res.status, path: res.body.issues?.[0]?.path }).toEqual({ q, status: 422, path })
    }
  })

  it('filters by flag_key, user_id and value, alone and together, with totals to match', async () => {
    const cases: Array<[string, (i: Item) => boolean]> = [
      ['flag_key=alpha', (i) => i.flag_key === 'alpha'],
      ['user_id=u3', (i) => i.user_id === 'u3'],
      ['value=false', (i) => i.value === 'false'],
      ['value=green', (i) => i.value === 'green'],
      ['flag_key=alpha&value=true', (i) => i.flag_key === 'alpha' && i.value === 'true'],
      ['flag_key=beta&user_id=u2', (i) => i.flag_key === 'beta' && i.user_id === 'u2'],
      ['user_id=u4&value=blue', (i) => i.user_id === 'u4' && i.value === 'blue'],
      [
        'flag_key=alpha&user_id=u0&value=false',
        (i) => i.flag_key === 'alpha' && i.user_id === 'u0' && i.value === 'false',
      ],
      ['flag_key=alpha&value=blue', () => false],
      ['flag_key=gamma', () => false],
    ]
    for (const [q, pred] of cases) {
      const expected = where(pred)
      const res = await f.list(`${q}&limit=200`)
      expect({ q, status: res.status, total: res.body.total }).toEqual({ q, status: 200, total: expected.length })
      expect(res.body.items).toEqual(newestFirst(expected).slice(0, 200))
    }
    expect(where((i) => i.flag_key === 'alpha' && i.user_id === 'u0' && i.value === 'false').length).toBeGreaterThan(0)
  })

  it('since_id answers the oldest rows after it in id order, ignores offset, and total ignores since_id', async () => {
    const after = all[99]?.id as number
    const res = await f.list(`since_id=${after}`)
    expect(res.body.total).toBe(N)
    expect(res.body.items).toEqual(all.slice(100, 150))
    expect((await f.list(`since_id=${after}&offset=30`)).body).toEqual(res.body)

    const alpha = where((i) => i.flag_key === 'alpha')
    const filtered = await f.list(`flag_key=alpha&since_id=${after}&limit=10`)
    expect(filtered.body).toEqual({ items: alpha.filter((i) => i.id > after).slice(0, 10), total: alpha.length })

    // A poller that keeps passing the last id it saw gets every row exactly once, then nothing.
    const seen: Item[] = []
    let cursor = 0
    for (;;) {
      const page = await f.list(`since_id=${cursor}&limit=200&value=true`)
      if (page.body.items.length === 0) break
      seen.push(...page.body.items)
      cursor = page.body.items.at(-1).id
    }
    expect(seen).toEqual(where((i) => i.value === 'true'))
    expect((await f.list(`since_id=${all.at(-1)?.id}`)).body).toEqual({ items: [], total: N })
  })

  it('lets project viewers and the environment key read lists and stats, nobody else', async () => {
    const readOnly = await f.h.createToken(f.h.admin, 'read_only')
    const cases: Array<[string, Parameters<typeof f.list>[1], number]> = [
      ['workspace admin', f.h.admin, 200],
      ['project viewer', f.viewer, 200],
      ['read_only token of an admin', bearer(readOnly), 200],
      ['SDK key of the environment', f.key, 200],
      ['SDK key of another environment', f.stagingKey, 403],
      ['SDK key of another project', f.otherProjectKey, 404],
      ['non-member', f.outsider, 404],
      ['no credentials', anonymous, 401],
    ]
    for (const [name, as, status] of cases) {
      expect({ name, list: (await f.list('limit=1', as)).status, stats: (await f.stats(as)).status }).toEqual({
        name,
        list: status,
        stats: status,
      })
    }
    expect((await f.list('', f.h.admin, '00000000-0000-4000-8000-000000000000')).status).toBe(404)
  })
})
