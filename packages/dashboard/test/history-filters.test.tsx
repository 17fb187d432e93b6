// @vitest-environment happy-dom

import { act, cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { changesUrl, filterOf, ProjectHistory, searchWith } from '../src/history-filters.js'
import type { LiveFlags, LiveSnapshot } from '../src/live-flags.js'
import type { Environment, Project } from '../src/types.js'
import { QueryWrapper, resetQueryClient } from './query-wrapper.js'

afterEach(() => {
  cleanup()
  resetQueryClient()
  vi.unstubAllGlobals()
})

const settle = () => act(async () => new Promise((resolve) => setTimeout(resolve, 20)))
const none = { flag: '', environment: '', person: '', from: '', to: '' }

describe('history filters in the URL', () => {
  it('read and write the page’s query string, keeping its other parameters', () => {
    expect(filterOf('?tab=history&flag=checkout&person=2')).toEqual({ ...none, flag: 'checkout', person: '2' })
    expect(searchWith('tab=history&flag=old', { ...none, person: '2', from: '2026-11-01' })).toBe(
      'tab=history&person=2&from=2026-11-01',
    )
  })

  it('become the changes route’s query: the last day inclusive, days in the reader’s time zone', () => {
    const url = changesUrl('p1', {
      flag: 'checkout',
      environment: 'prod',
      person: '2',
      from: '2026-11-01',
      to: '2026-11-03',
    })
    const params = new URL(url, 'http://x').searchParams
    expect(url.startsWith('/api/projects/p1/changes?')).toBe(true)
    expect(Object.fromEntries(params)).toEqual({
      limit: '50',
      flag: 'checkout',
      environment_id: 'prod',
      actor: '2',
      from: new Date(2026, 10, 1).toISOString(),
      to: new Date(2026, 10, 4).toISOString(),
    })
    expect(changesUrl('p1', none)).toBe('/api/projects/p1/changes?limit=50')
  })
})

const environments: Environment[] = [
  {
    id: 'prod',
    name: 'Production',
    slug: 'production',
    color: '#f00',
    is_default: false,
    require_approval: true,
    created_at: '',
  },
  {
    id: 'staging',
    name: 'Staging',
    slug: 'staging',
    color: '#0f0',
    is_default: true,
    require_approval: false,
    created_at: '',
  },
]
const project = { id: 'p1', name: 'Shop' } as Project
const snapshot: LiveSnapshot = { state: 'live', flags: new Map([['prod', new Map()]]) }
const live = { subscribe: () => () => {}, getSnapshot: () => snapshot } as unknown as LiveFlags
const users = [{ id: 2, email: 'dan@example.com', name: 'Dan', role: 'editor', created_at: '' }]

function serve(answer: (url: string) => Response) {
  const fetch = vi.fn(async (input: RequestInfo | URL) => {
    const url = String(input)
    return url === '/api/users' ? new Response(JSON.stringify(users)) : answer(url)
  })
  vi.stubGlobal('fetch', fetch)
  return fetch
}

describe('the project’s history tab', () => {
  it('asks for the URL’s filters, and a changed control changes the URL and the request', async () => {
    history.replaceState(null, '', '/projects/p1?tab=history&person=2')
    const fetch = serve(() => new Response(JSON.stringify({ entries: [], nextCursor: null })))
    render(<ProjectHistory project={project} environments={environments} live={live} />, { wrapper: QueryWrapper })
    await settle()
    expect(fetch).toHaveBeenCalledWith('/api/projects/p1/changes?limit=50&actor=2', expect.anything())
    expect((screen.getByLabelText('Person') as HTMLSelectElement).value).toBe('2')

    fireEvent.change(screen.getByLabelText('Environment'), { target: { value: 'prod' } })
    await settle()
    expect(location.search).toBe('?tab=history&person=2&environment=prod')
    expect(fetch).toHaveBeenCalledWith(
      '/api/projects/p1/changes?limit=50&environment_id=prod&actor=2',
      expect.anything(),
    )

    const flag = screen.getByLabelText('Flag')
    fireEvent.change(flag, { target: { value: 'checkout' } })
    fireEvent.keyDown(flag, { key: 'Enter' })
    await settle()
    expect(location.search).toBe('?tab=history&person=2&environment=prod&flag=checkout')

    fireEvent.click(screen.getByRole('button', { name: 'Clear filters' }))
    await settle()
    expect(location.search).toBe('?tab=history')
    expect(fetch).toHaveBeenLastCalledWith('/api/projects/p1/changes?limit=50', expect.anything())
  })

  it('shows the service’s error and code for a refused filter', async () => {
    history.replaceState(null, '', '/projects/p1?tab=history&from=2026-11-05&to=2026-11-01')
    const body = { error: 'invalid query: from: must not be after to', code: 'validation_failed' }
    serve(() => new Response(JSON.stringify(body), { status: 422 }))
    render(<ProjectHistory project={project} environments={environments} live={live} />, { wrapper: QueryWrapper })
    await settle()
    const alert = screen.getByRole('alert')
    expect(alert.textContent).toContain('from: must not be after to')
    expect(alert.dataset.code).toBe('validation_failed')
  })
})
