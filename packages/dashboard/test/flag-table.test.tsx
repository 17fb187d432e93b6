// @vitest-environment happy-dom

import { cleanup, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import { FlagTable } from '../src/flag-table.js'
import type { Environment, Flag } from '../src/types.js'

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
        onToggle={() => {}}
        onEdit={() => {}}
      />,
    )
    const cell = (slug: string) => document.querySelector(`td[data-env="${slug}"] .served`)?.textContent
    expect(cell('prod')).toBe(
      'Users matching rule 1 (country is NL) get `false`; of everyone else, 25 % get `true`, the rest `false`',
    )
    expect(cell('dev')).toBe('Off: everyone gets `false`')
    expect(screen.getByRole('switch', { name: 'theme in Production' }).textContent).toBe('On')
  })
})
