// @vitest-environment happy-dom

import { act, cleanup, render, screen, within } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ImpressionsPanel } from '../src/impressions-panel.js'
import { type ImpressionStats, servedValueCounts, shownEnvironmentId, shownFlagKey } from '../src/impressions-view.js'
import type { Environment } from '../src/types.js'
import { QueryWrapper, resetQueryClient } from './query-wrapper.js'

afterEach(() => {
  cleanup()
  resetQueryClient()
  vi.unstubAllGlobals()
})

const env = (id: string, is_default = false): Environment => ({
  id,
  name: id,
  slug: id,
  color: '#888',
  is_default,
  require_approval: false,
  created_at: '2026-11-25T00:00:00Z',
})

const entry = (flag_key: string, over: Partial<ImpressionStats> = {}): ImpressionStats => ({
  flag_key,
  total: 9,
  true_count: 0,
  false_count: 0,
  unique_users: 2,
  last_seen: '2026-11-27T10:00:00Z',
  values: [],
  ...over,
})

// An invented key sorts first; banner is a string flag, checkout a boolean one, gone was deleted.
const STATS = [
  entry('aaa-invented', { values: [{ value: 'x', count: 9 }] }),
  entry('banner', {
    total: 9,
    true_count: 3,
    false_count: 6,
    values: [
      { value: 'blue', count: 5 },
      { value: 'green', count: 4 },
    ],
  }),
  entry('checkout', { true_count: 3, false_count: 6, values: [{ value: 'false', count: 6 }] }),
  entry('gone', { values: [{ value: '{"a":1}', count: 9 }] }),
]
const FLAGS = [
  { key: 'banner', flag_type: 'string' },
  { key: 'checkout', flag_type: 'boolean' },
  { key: 'limit', flag_type: 'integer' },
]

describe('the impressions page, pure parts', () => {
  it('shows the chosen environment while it exists, else the default one', () => {
    const envs = [env('dev'), env('prod', true)]
    expect(shownEnvironmentId([], '')).toBe('')
    expect(shownEnvironmentId(envs, '')).toBe('prod')
    expect(shownEnvironmentId(envs, 'dev')).toBe('dev')
    expect(shownEnvironmentId(envs, 'deleted')).toBe('prod')
  })

  it('defaults to the first flag of the environment with stats, never to a key it does not have', () => {
    const flags = new Set(FLAGS.map((f) => f.key))
    expect(shownFlagKey(STATS, flags, '')).toBe('banner')
    expect(shownFlagKey(STATS, flags, 'gone')).toBe('gone') // chosen by the user: shown
    expect(shownFlagKey(STATS, flags, 'not-in-stats')).toBe('banner')
    expect(shownFlagKey([entry('aaa-invented')], flags, '')).toBe('')
    expect(shownFlagKey(STATS, undefined, '')).toBe('aaa-invented') // the flags could not load
  })

  it('counts true and false for a boolean flag and the values served for the other types', () => {
    const banner = STATS[1] as ImpressionStats
    expect(servedValueCounts(banner, 'boolean')).toEqual([
      { value: 'true', count: 3 },
      { value: 'false', count: 6 },
    ])
    for (const type of ['string', 'integer', 'json', undefined] as const) {
      expect(servedValueCounts(banner, type)).toEqual([
        { value: 'blue', count: 5 },
        { value: 'green', count: 4 },
      ])
    }
  })
})

/** A fetch answering the panel's routes from the fixtures above; records the paths asked. */
function stubService() {
  const asked: string[] = []
  vi.stubGlobal(
    'fetch',
    vi.fn(async (input: string) => {
      asked.push(input)
      const body = input.endsWith('/impressions/stats')
        ? STATS
        : input.endsWith('/flags')
          ? FLAGS
          : { items: [], total: 0 }
      return new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } })
    }),
  )
  return asked
}
const settle = () => act(async () => new Promise((resolve) => setTimeout(resolve, 20)))

describe('the impressions panel', () => {
  it('loads the default environment when the environments arrive after it mounted', async () => {
    const asked = stubService()
    const view = render(<ImpressionsPanel environments={[]} />, { wrapper: QueryWrapper })
    await settle()
    expect(asked).toEqual([])
    view.rerender(<ImpressionsPanel environments={[env('dev'), env('prod', true)]} />)
    await settle()
    expect(asked).toContain('/api/environments/prod/impressions/stats')
    const select = screen.getByLabelText('Flag') as HTMLSelectElement
    expect([...select.options].map((o) => o.value)).toEqual(['aaa-invented', 'banner', 'checkout', 'gone'])
    expect(select.value).toBe('banner')
  })

  it('shows a string flag its counts per served value, not true and false', async () => {
    stubService()
    render(<ImpressionsPanel environments={[env('prod', true)]} />, { wrapper: QueryWrapper })
    await settle()
    const totals = screen.getByLabelText('Totals of banner')
    expect(within(totals).queryByText('true')).toBeNull()
    expect(within(totals).queryByText('false')).toBeNull()
    const counts = [...totals.querySelectorAll('[data-value]')].map((d) => [
      d.getAttribute('data-value'),
      d.querySelector('dd')?.textContent,
    ])
    expect(counts).toEqual([
      ['blue', '5'],
      ['green', '4'],
    ])
    expect(screen.getByRole('option', { name: 'aaa-invented (not a flag now)' })).toBeTruthy()
  })
})
