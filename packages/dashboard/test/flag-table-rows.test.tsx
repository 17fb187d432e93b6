// @vitest-environment happy-dom

import { cleanup, render } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { FlagRow } from '../src/flag-view.js'
import type { Environment, Flag } from '../src/types.js'

/** The table's lifecycle props: owners by id, and the time its "3 days ago" counts from. */
const ownerName = (id: number) => `#${id}`
const NOW = Date.UTC(2026, 0, 1)

// Counts the cells that render: each one describes its flag once.
const described = vi.hoisted(() => ({ count: 0 }))
vi.mock('@flagsync/evaluation', async (original) => {
  const real = await original<typeof import('@flagsync/evaluation')>()
  return {
    ...real,
    describeFlag: (...args: Parameters<typeof real.describeFlag>) => {
      described.count++
      return real.describeFlag(...args)
    },
  }
})
const { FlagTable } = await import('../src/flag-table.js')
const { rowWindow, WINDOW_FROM } = await import('../src/row-window.js')

afterEach(cleanup)

const environments: Environment[] = ['prod', 'dev'].map((id) => ({
  id,
  name: id,
  slug: id,
  color: '#888',
  is_default: id === 'prod',
  require_approval: false,
  created_at: '2026-11-25T00:00:00Z',
}))
const flag = (key: string, over: Partial<Flag> = {}): Flag => ({
  key,
  is_enabled: true,
  rollout_percentage: null,
  description: null,
  flag_type: 'boolean',
  rules: [],
  variants: [],
  prerequisites: [],
  ...over,
})

/** Rows as `flagRows` builds them: new row objects and maps every time, the flags themselves kept. */
const rowsOf = (flags: Flag[]): FlagRow[] =>
  flags.map((f) => ({ key: f.key, byEnvironment: new Map(environments.map((e) => [e.id, f])) }))

describe('the flag table under live updates', () => {
  it('renders again only the row whose flag changed, with callbacks that see the latest props', () => {
    const flags = Array.from({ length: 200 }, (_, i) => flag(`flag-${i}`))
    const table = (rows: FlagRow[], onEdit: (envId: string, key: string) => void) => (
      <FlagTable
        projectName="Shop"
        environments={environments}
        rows={rows}
        empty="No flags"
        blocked={null}
        ownerName={ownerName}
        now={NOW}
        onToggle={() => {}}
        onEdit={onEdit}
      />
    )
    const { rerender } = render(table(rowsOf(flags), () => {}))
    expect(described.count).toBe(400)
    described.count = 0
    const changed = [...flags]
    changed[7] = flag('flag-7', { rollout_percentage: 30 })
    const edits: string[] = []
    rerender(table(rowsOf(changed), (envId, key) => edits.push(`${envId}/${key}`)))
    expect(described.count).toBe(2)
    expect(document.querySelector('tr[data-flag="flag-7"] td[data-env="prod"] .served')?.textContent).toBe(
      '30 % get true, the rest false',
    )
    // A row that did not render again still calls the newest onEdit.
    ;(document.querySelector('button[aria-label="Edit flag-3 in dev"]') as HTMLButtonElement).click()
    expect(edits).toEqual(['dev/flag-3'])
  })
})

describe('a long flag table', () => {
  it('renders the rows near the screen, with the whole table’s row count and each row’s place', () => {
    const flags = Array.from({ length: 1000 }, (_, i) => flag(`flag-${String(i).padStart(4, '0')}`))
    render(
      <FlagTable
        projectName="Shop"
        environments={environments}
        rows={rowsOf(flags)}
        empty="No flags"
        blocked={null}
        ownerName={() => ''}
        now={0}
        onToggle={() => {}}
        onEdit={() => {}}
      />,
    )
    const rows = [...document.querySelectorAll('tbody tr[data-flag]')]
    expect(rows.length).toBeGreaterThan(10)
    expect(rows.length).toBeLessThan(100)
    expect(rows[0]?.getAttribute('aria-rowindex')).toBe('2')
    expect(document.querySelector('table.flags')?.getAttribute('aria-rowcount')).toBe('1001')
    // The rows left out keep their height, so the page scrolls as far as with every row.
    expect(document.querySelector('tr.row-spacer')).not.toBeNull()
  })
})

describe('rowWindow', () => {
  it('is every row up to WINDOW_FROM rows, and past it the rows on screen with a margin each side', () => {
    expect(rowWindow(WINDOW_FROM, -5000, 800, 50)).toEqual({ start: 0, end: WINDOW_FROM, before: 0, after: 0 })
    // Scrolled 5 000 px into a table of 50 px rows: rows 100 to 116 are on screen, 20 more each side.
    expect(rowWindow(1000, -5000, 800, 50)).toEqual({ start: 80, end: 136, before: 4000, after: 864 * 50 })
    // The table below the screen's top: its first rows.
    expect(rowWindow(1000, 300, 800, 50)).toMatchObject({ start: 0, end: 30, before: 0 })
    // Scrolled past the end: the last rows.
    expect(rowWindow(1000, -60_000, 800, 50)).toMatchObject({ start: 979, end: 1000, after: 0 })
  })
})

describe('the flag table’s sentences', () => {
  it('describe the flag as saved, segments by name, while it is the version the stream shows', () => {
    const rule = (attribute: string, operator: string, value: string) => ({
      attribute,
      operator: operator as 'ends_with',
      values: [value],
      variant: false,
    })
    // The stream's copy has the segment expanded into its two conditions.
    const shown = flag('beta', {
      revision: 7,
      rules: [rule('email', 'ends_with', '@acme.test'), rule('email', 'starts_with', 'ops.')],
    })
    const saved = flag('beta', { revision: 7, rules: [{ segment_key: 'staff', variant: false }] })
    const table = (savedFlag: Flag) => (
      <FlagTable
        projectName="Shop"
        environments={environments}
        rows={rowsOf([shown])}
        saved={new Map(environments.map((e) => [e.id, new Map([['beta', savedFlag]])]))}
        empty="No flags"
        blocked={null}
        ownerName={() => ''}
        now={0}
        onToggle={() => {}}
        onEdit={() => {}}
      />
    )
    const { rerender } = render(table(saved))
    const cell = () => document.querySelector('tr[data-flag="beta"] td[data-env="prod"] .served')?.textContent
    expect(cell()).toBe('Users matching rule 1 (in segment staff) get false; everyone else gets true')
    // A saved copy of another revision is not what the stream shows: the stream's copy is described.
    rerender(table({ ...saved, revision: 6 }))
    expect(cell()).toBe(
      'Users matching rule 1 (email ends with @acme.test) get false; those matching rule 2 (email starts with ops.) get false; everyone else gets true',
    )
  })
})
