import { describe, expect, it } from 'vitest'
import { approvalConflictOf, conflictRows, patchDiff } from '../src/diff.js'
import { buildFlag, draftOf, OPERATORS, patchOf } from '../src/flag-draft.js'
import { explainCycle, type FlagFilter, flagRows } from '../src/flag-view.js'
import { sourceOf, whoOf } from '../src/history.js'
import { type FlagsByEnv, LiveFlags } from '../src/live-flags.js'
import { promotionDiff } from '../src/promote.js'
import { bucketImpressions, bucketSize } from '../src/time-series.js'
import type { Flag } from '../src/types.js'
import { parseValue, valueText } from '../src/values.js'
import { formatPercent, summarizeWeights } from '../src/weights.js'

const flag = (over: Partial<Flag>): Flag => ({
  key: 'f',
  is_enabled: true,
  rollout_percentage: null,
  description: null,
  rules: [],
  flag_type: 'boolean',
  variants: [],
  prerequisites: [],
  ...over,
})

describe('variant weights (relative, normalized against their total)', () => {
  it('gives each variant its share of the total, whatever the total', () => {
    const s = summarizeWeights([{ weight: 1 }, { weight: 3 }])
    expect(s.total).toBe(4)
    expect(s.shares.map((x) => x.percent)).toEqual([25, 75])
    expect(s.problem).toBeNull()
    expect(summarizeWeights([{ weight: 200 }, { weight: 300 }]).shares.map((x) => x.percent)).toEqual([40, 60])
  })
  it('refuses a total of 0 and weights the service refuses, naming them', () => {
    expect(summarizeWeights([{ weight: 0 }, { weight: 0 }]).problem).toMatch(/add up to 0/)
    const bad = summarizeWeights([{ weight: -1 }, { weight: 1.5 }, { weight: 1_000_001 }, { weight: Number.NaN }])
    expect(bad.problem).toMatch(/fix the weights/)
    expect(bad.shares.map((x) => x.problem)).toEqual([
      'a weight cannot be negative',
      'a weight is a whole number',
      'a weight is at most 1,000,000',
      'a weight is a whole number',
    ])
    expect(summarizeWeights([]).problem).toBeNull()
  })
  it('formats shares', () => {
    expect(formatPercent(100 / 3)).toBe('33.3 %')
    expect(formatPercent(25)).toBe('25 %')
  })
})

describe('prerequisite cycles in words', () => {
  it('turns the service message into a sentence naming each step', () => {
    expect(explainCycle('prerequisite cycle: a -> b -> a')).toBe(
      'These prerequisites go round in a circle: “a” requires “b” and “b” requires “a”. Each would wait for the other forever, so the service refuses the save. Remove one of these prerequisites.',
    )
    expect(explainCycle('prerequisite cycle: a -> b -> c -> a')).toContain(
      '“a” requires “b”, “b” requires “c” and “c” requires “a”',
    )
    expect(explainCycle('prerequisite cycle: a -> a')).toContain('“a” requires itself')
    expect(explainCycle('no such segment')).toBe('no such segment')
  })
})

describe('the flag table', () => {
  const flags = new Map([
    [
      'prod',
      new Map([
        ['a', flag({ key: 'a', description: 'Copy' })],
        ['b', flag({ key: 'b', is_enabled: false, flag_type: 'string' })],
      ]),
    ],
    ['dev', new Map([['a', flag({ key: 'a', is_enabled: false })]])],
  ])
  // The REST copies carry the lifecycle: tags (the project's), times and the stale mark per environment.
  const lifecycle = (tags: string[], stale: boolean) => ({
    tags,
    owner: null,
    last_changed_at: '2026-01-01T00:00:00.000Z',
    last_evaluated_at: null,
    stale: stale ? { reason: 'one_value' as const, since: '2026-01-01T00:00:00.000Z' } : null,
  })
  const saved = new Map([
    [
      'prod',
      new Map([
        ['a', flag({ key: 'a', ...lifecycle(['new', 'web'], false) })],
        ['b', flag({ key: 'b', ...lifecycle(['web'], true) })],
      ]),
    ],
  ])
  const all: FlagFilter = { search: '', type: 'all', state: 'all', tag: '', stale: false }
  it('makes one row per key across environments, filtered by search, tag, stale, type and state', () => {
    const keys = (f: Partial<FlagFilter>) => flagRows(flags, ['prod', 'dev'], { ...all, ...f }, saved).map((r) => r.key)
    expect(keys({})).toEqual(['a', 'b'])
    expect(flagRows(flags, ['prod', 'dev'], all)[0]?.byEnvironment.size).toBe(2)
    expect(keys({ search: 'B' })).toEqual(['b'])
    expect(keys({ tag: 'NEW' })).toEqual(['a'])
    expect(keys({ tag: 'web' })).toEqual(['a', 'b'])
    expect(keys({ stale: true })).toEqual(['b'])
    expect(flagRows(flags, ['prod', 'dev'], all, saved)[0]?.meta?.tags).toEqual(['new', 'web'])
    expect(keys({ search: 'copy' })).toEqual(['a'])
    expect(keys({ type: 'string' })).toEqual(['b'])
    expect(keys({ state: 'mixed' })).toEqual(['a'])
    expect(keys({ state: 'off' })).toEqual(['b'])
    expect(keys({ state: 'on' })).toEqual([])
  })
})

describe('the editor draft', () => {
  it('round-trips a flag and builds the service body, typed', () => {
    const original = flag({
      key: 'price',
      flag_type: 'integer',
      default_value: 10,
      rollout_percentage: 50,
      variants: [{ value: 5, weight: 1 }],
      rules: [{ attribute: 'plan', operator: 'greater_than', values: ['2', '3'], variant: 7 }, { segment_key: 'beta' }],
      prerequisites: [{ flag_key: 'other', required_value: true }],
    })
    const { flag: built, problems } = buildFlag(draftOf(original))
    expect(problems).toEqual([])
    expect(built).toEqual({
      key: 'price',
      is_enabled: true,
      description: null,
      flag_type: 'integer',
      rollout_percentage: 50,
      default_value: 10,
      variants: [{ value: 5, weight: 1 }],
      rules: [{ attribute: 'plan', operator: 'greater_than', values: ['2', '3'], variant: 7 }, { segment_key: 'beta' }],
      prerequisites: [{ flag_key: 'other', required_value: true }],
    })
    expect(patchOf(built)).toMatchObject({ default_value: 10, disabled_value: null })
    expect(patchOf(built)).not.toHaveProperty('key')
  })
  it('names what does not fit the type', () => {
    const draft = { ...draftOf(flag({ flag_type: 'integer' })), defaultValue: '1.5', rollout: '101' }
    expect(buildFlag(draft).problems).toEqual([
      'Rollout must be a whole number from 0 to 100',
      'Default value must be a whole number',
    ])
    expect(parseValue('boolean', 'yes')).toEqual({ ok: false, error: 'true or false' })
    expect(parseValue('json', '{"a":[1]}')).toEqual({ ok: true, value: { a: [1] } })
    expect(valueText('string', 'x')).toBe('x')
    expect(valueText('json', { a: 1 })).toBe('{"a":1}')
    expect(OPERATORS).toHaveLength(9)
  })
})

describe('LiveFlags (the dashboard stream)', () => {
  /** The store the page gives it (the query cache); here a plain variable. */
  function memoryStore() {
    let saved: FlagsByEnv | undefined
    return { read: () => saved, write: (flags: FlagsByEnv) => (saved = flags), get: () => saved }
  }
  function fakeSource() {
    const handlers = new Map<string, (e: { data: string }) => void>()
    const source = {
      url: '',
      onerror: null as (() => void) | null,
      addEventListener: (name: string, fn: (e: { data: string }) => void) => handlers.set(name, fn),
      close: () => {},
      emit: (name: string, data: unknown) => handlers.get(name)?.({ data: JSON.stringify(data) }),
    }
    return source
  }
  it('swaps in a whole bootstrap at ready, then applies live updates per environment', () => {
    const source = fakeSource()
    const store = memoryStore()
    const live = new LiveFlags(['e1', 'e2'], store, (url) => {
      source.url = url
      return source as never
    })
    live.start()
    expect(source.url).toBe('/stream?environment_id=e1,e2')
    const seen: string[] = []
    live.subscribe(() => seen.push(live.getSnapshot().state))
    source.emit('connected', { environment_id: null })
    source.emit('update', { type: 'UPSERT', env_id: 'e1', flag: flag({ key: 'a' }) })
    expect(live.getSnapshot().state).toBe('connecting')
    expect(live.getSnapshot().flags.get('e1')?.size ?? 0).toBe(0)
    source.emit('ready', '1')
    expect(live.getSnapshot().flags.get('e1')?.get('a')?.is_enabled).toBe(true)
    source.emit('update', { type: 'UPSERT', env_id: 'e2', flag: flag({ key: 'a', is_enabled: false }) })
    source.emit('update', { type: 'DELETE', env_id: 'e1', key: 'a' })
    expect(live.getSnapshot().flags.get('e1')?.has('a')).toBe(false)
    expect(live.getSnapshot().flags.get('e2')?.get('a')?.is_enabled).toBe(false)
    expect(store.get()).toBe(live.getSnapshot().flags)
    source.onerror?.()
    expect(live.getSnapshot().state).toBe('reconnecting')
    expect(seen).toEqual(['live', 'live', 'live', 'reconnecting'])
  })

  it('on a resumed stream keeps what it shows, applies the missed updates and is live again at ready', () => {
    const source = fakeSource()
    const live = new LiveFlags(['e1', 'e2'], memoryStore(), () => source as never)
    live.start()
    source.emit('connected', { environment_id: null })
    source.emit('update', { type: 'UPSERT', env_id: 'e1', flag: flag({ key: 'a' }) })
    source.emit('update', { type: 'UPSERT', env_id: 'e1', flag: flag({ key: 'b' }) })
    source.emit('ready', '2')
    source.onerror?.()
    source.emit('resumed', { environment_id: null })
    source.emit('update', { type: 'DELETE', env_id: 'e1', key: 'b' })
    expect(live.getSnapshot().state).toBe('reconnecting')
    expect(live.getSnapshot().flags.get('e1')?.has('b')).toBe(true) // swapped in at ready, as a bootstrap
    source.emit('ready', '1')
    expect(live.getSnapshot().state).toBe('live')
    expect([...(live.getSnapshot().flags.get('e1')?.keys() ?? [])]).toEqual(['a'])

    // Cut off inside a bootstrap: the resume continues it, and ready swaps in the whole.
    source.emit('connected', { environment_id: null })
    source.emit('update', { type: 'UPSERT', env_id: 'e2', flag: flag({ key: 'c' }) })
    source.emit('resumed', { environment_id: null })
    source.emit('update', { type: 'UPSERT', env_id: 'e2', flag: flag({ key: 'd' }) })
    source.emit('ready', '1')
    expect(live.getSnapshot().flags.get('e1')?.size ?? 0).toBe(0)
    expect([...(live.getSnapshot().flags.get('e2')?.keys() ?? [])]).toEqual(['c', 'd'])
  })

  it("hears its project's environments event on the same connection, from any listener until it unsubscribes", () => {
    const source = fakeSource()
    let opened = 0
    const live = new LiveFlags(['e1'], memoryStore(), () => {
      opened++
      return source as never
    })
    live.start()
    const heard: string[][] = []
    const other: string[][] = []
    const stop = live.onEnvironmentOrder('p1', (ids) => heard.push(ids))
    live.onEnvironmentOrder('p2', (ids) => other.push(ids))
    source.emit('environments', { project_id: 'p1', environment_ids: ['e2', 'e1'] })
    source.emit('environments', { project_id: 'p1' })
    source.emit('environments', 'not an order')
    source.emit('environments', { project_id: 'p3', environment_ids: ['x'] })
    expect(heard).toEqual([['e2', 'e1']])
    expect(other).toEqual([])
    stop()
    source.emit('environments', { project_id: 'p1', environment_ids: ['e1', 'e2'] })
    expect(heard).toEqual([['e2', 'e1']])
    expect(opened).toBe(1)
  })
})

describe('change request diffs', () => {
  it('lists the fields the patch changes against the flag as it is now, null removing a value', () => {
    const current = flag({ key: 'x', is_enabled: false, default_value: true, rollout_percentage: 10 })
    expect(
      patchDiff(current, { is_enabled: true, rollout_percentage: 10, default_value: null, description: 'new' }),
    ).toEqual([
      { field: 'default_value', before: 'true', after: '(removed)' },
      { field: 'description', before: 'null', after: '"new"' },
      { field: 'is_enabled', before: 'false', after: 'true' },
    ])
    expect(patchDiff(undefined, { is_enabled: true })).toEqual([
      { field: 'is_enabled', before: '(not set)', after: 'true' },
    ])
  })
})

describe('a conflicting approval', () => {
  it('reads the first conflict of a 409 body, and lays each field out as when requested / now / requested', () => {
    const body = {
      error: 'flag "x" conflicts',
      code: 'conflict',
      conflicts: [
        {
          fields: ['rollout_percentage'],
          base: { key: 'x', rollout_percentage: 10 },
          current: { key: 'x', rollout_percentage: 30 },
          reason: 'rollout_percentage also changed after revision 4',
        },
      ],
    }
    const conflict = approvalConflictOf(body)
    expect(conflict).toEqual({
      fields: ['rollout_percentage'],
      base: { key: 'x', rollout_percentage: 10 },
      current: { key: 'x', rollout_percentage: 30 },
      reason: 'rollout_percentage also changed after revision 4',
    })
    expect(conflictRows(conflict as NonNullable<typeof conflict>, { rollout_percentage: 50 })).toEqual([
      { field: 'rollout_percentage', base: '10', now: '30', requested: '50' },
    ])
    expect(
      conflictRows({ fields: ['is_enabled'], base: null, current: null, reason: '' }, { is_enabled: true }),
    ).toEqual([{ field: 'is_enabled', base: '(no flag)', now: '(deleted)', requested: 'true' }])
    for (const other of [{ error: 'x' }, null, { conflicts: [] }, { conflicts: [{ fields: 'no' }] }]) {
      expect(approvalConflictOf(other)).toBeUndefined()
    }
  })
})

describe('impression time series', () => {
  it('buckets by evaluated_at and served value, keeping empty buckets as zeros', () => {
    const at = (min: number) => new Date(Date.UTC(2026, 0, 1, 10, min)).toISOString()
    const series = bucketImpressions(
      [
        { value: 'true', evaluated_at: at(0) },
        { value: 'false', evaluated_at: at(0) },
        { value: 'true', evaluated_at: at(1) },
        { value: 'true', evaluated_at: at(3) },
        { value: 'x', evaluated_at: 'not a time' },
      ],
      60_000,
    )
    const t0 = Date.UTC(2026, 0, 1, 10, 0) / 1000
    expect(series.times).toEqual([t0, t0 + 60, t0 + 120, t0 + 180])
    expect([...series.counts]).toEqual([
      ['false', [1, 0, 0, 0]],
      ['true', [1, 1, 0, 1]],
    ])
    expect(bucketImpressions([]).times).toEqual([])
  })
  it('picks the smallest bucket that keeps the span within 60 points', () => {
    expect(bucketSize(30 * 60_000)).toBe(60_000)
    expect(bucketSize(80 * 60_000)).toBe(5 * 60_000)
    expect(bucketSize(2 * 24 * 3_600_000)).toBe(3_600_000)
    expect(bucketSize(365 * 24 * 3_600_000)).toBe(24 * 3_600_000)
  })
})

describe('promotion diffs', () => {
  it('compares the copied fields of the source with the target, or with nothing when the target lacks the flag', () => {
    const source = flag({ key: 'p', is_enabled: true, rollout_percentage: 30 })
    const target = flag({ key: 'p', is_enabled: false, rollout_percentage: 30 })
    expect(promotionDiff(source, target)).toEqual([{ field: 'is_enabled', before: 'false', after: 'true' }])
    expect(promotionDiff(source, source)).toEqual([])
    expect(promotionDiff(source, undefined).map((r) => r.field)).toContain('rules')
  })
})

describe('history entries in words', () => {
  it('names the verified actor, the declared one beside it, and the source', () => {
    const actor = { name: 'ann@example.com', verified: true as const }
    expect(whoOf({ actor, declaredActor: null })).toBe('ann@example.com')
    expect(whoOf({ actor, declaredActor: { name: 'Ann’s laptop', verified: false } })).toBe(
      'ann@example.com (as “Ann’s laptop”)',
    )
    expect(whoOf({ actor: null, declaredActor: null })).toBe('unknown')
    expect(sourceOf({ source: { type: 'change_request', id: 4 } })).toBe('change request #4')
    expect(sourceOf({ source: { type: 'sync', batchId: '0123456789abcdef', operationIndex: 0 } })).toBe(
      'sync batch 01234567… operation 1',
    )
    expect(sourceOf({ source: { type: 'api', route: 'PATCH /x' } })).toBe('API PATCH /x')
    expect(sourceOf({ source: null })).toBe('')
  })
})
