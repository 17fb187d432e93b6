// @vitest-environment happy-dom

import { cleanup, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import { FlagTable } from '../src/flag-table.js'
import { type FlagFilter, flagRows } from '../src/flag-view.js'
import type { Environment, Flag } from '../src/types.js'

/** The table's lifecycle props: owners by id, and the time its "3 days ago" counts from. */
const ownerName = (id: number) => `#${id}`
const NOW = Date.UTC(2026, 0, 1)
const NO_FILTER: FlagFilter = { search: '', type: 'all', state: 'all', tag: '', stale: false }

afterEach(cleanup)

const env = (id: string, name: string): Environment => ({
  id,
  name,
  slug: id,
  color: '#888',
  is_default: id === 'dev',
  require_approval: false,
  created_at: '2026-11-25T00:00:00Z',
})
const flag = (over: Partial<Flag>): Flag => ({
  key: 'theme',
  is_enabled: true,
  rollout_percentage: null,
  description: null,
  flag_type: 'boolean',
  rules: [],
  variants: [],
  prerequisites: [],
  ...over,
})

describe('the flag table', () => {
  it('says in each cell who gets what in that environment', () => {
    const prod = flag({
      rollout_percentage: 25,
      rules: [{ attribute: 'country', operator: 'equals', values: ['NL'], variant: false }],
    })
    const dev = flag({ is_enabled: false })
    const environments = [env('prod', 'Production'), env('dev', 'Development')]
    const byEnvironment = new Map([
      ['prod', prod],
      ['dev', dev],
    ])
    render(
      <FlagTable
        projectName="Shop"
        environments={environments}
        rows={[{ key: 'theme', byEnvironment }]}
        empty="No flags"
        blocked={null}
        ownerName={ownerName}
        now={NOW}
        onToggle={() => {}}
        onEdit={() => {}}
      />,
    )
    const served = (slug: string) => document.querySelector(`td[data-env="${slug}"] .served`)
    const cell = (slug: string) => served(slug)?.textContent
    expect(cell('prod')).toBe(
      'Users matching rule 1 (country is NL) get false; of everyone else, 25 % get true, the rest false',
    )
    expect(cell('dev')).toBe('Off: everyone gets false')
    // The values the sentence quotes are set as code, never shown with their backticks.
    const codes = [...(served('prod')?.querySelectorAll('code') ?? [])].map((c) => c.textContent)
    expect(codes).toEqual(['false', 'true', 'false'])
    expect(screen.getByRole('switch', { name: 'theme in Production' }).textContent).toBe('On')
  })

  it('shows the tags, the owner, and per environment the times and a stale mark saying why', () => {
    const saved = new Map([
      [
        'prod',
        new Map([
          [
            'theme',
            flag({
              tags: ['payments', 'web'],
              owner: 7,
              last_changed_at: '2025-11-22T00:00:00.000Z',
              last_evaluated_at: null,
              stale: { reason: 'one_value', since: '2025-11-22T00:00:00.000Z' },
            }),
          ],
        ]),
      ],
    ])
    const streamed = new Map([['prod', new Map([['theme', flag({})]])]])
    const [row] = flagRows(streamed, ['prod'], NO_FILTER, saved)
    render(
      <FlagTable
        projectName="Shop"
        environments={[env('prod', 'Production')]}
        rows={row ? [row] : []}
        empty="No flags"
        blocked={null}
        ownerName={ownerName}
        now={NOW}
        onToggle={() => {}}
        onEdit={() => {}}
      />,
    )
    expect(document.querySelector('ul.chips[aria-label="Tags"]')?.textContent).toBe('paymentsweb')
    expect(document.querySelector('.flag-owner')?.textContent).toBe('owner: #7')
    expect(document.querySelector('td[data-env="prod"] .lifecycle')?.textContent).toBe(
      'changed 40 days ago · evaluated neverstale: serves one value to everyone',
    )
  })
})
