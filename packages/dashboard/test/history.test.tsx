// @vitest-environment happy-dom

import { type ServiceAuditEntryWire, serviceAuditPageSchema } from '@flagsync/protocol'
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { History, sourceOf } from '../src/history.js'
import { QueryWrapper, resetQueryClient } from './query-wrapper.js'

afterEach(() => {
  cleanup()
  resetQueryClient()
  vi.unstubAllGlobals()
})

const settle = () => act(async () => new Promise((resolve) => setTimeout(resolve, 20)))
const ann = { name: 'ann@example.com', verified: true as const }
const bob = { name: 'bob@example.com', verified: true as const }

const entry = (over: Partial<ServiceAuditEntryWire>): ServiceAuditEntryWire => ({
  revision: 9,
  time: '2026-11-25T10:00:00.000Z',
  collection: 'flags',
  environment_id: 'prod',
  key: 'checkout',
  action: 'update',
  before: { key: 'checkout', is_enabled: false },
  beforeKnown: true,
  after: { key: 'checkout', is_enabled: true },
  changedFields: ['is_enabled'],
  actor: bob,
  declaredActor: null,
  source: { type: 'api', route: 'PATCH /api/environments/:env_id/flags/:key' },
  ...over,
})

/** A flag's history as the service answers it: an approved change request, then a change of a segment it uses. */
const page = {
  entries: [
    entry({
      revision: 12,
      collection: 'segments',
      environment_id: null,
      key: 'beta',
      before: { key: 'beta', rules: [] },
      after: { key: 'beta', rules: [{ attribute: 'email', operator: 'ends_with', values: [''] }] },
      changedFields: ['rules'],
      actor: ann,
      source: { type: 'api', route: 'PATCH /api/projects/:project_id/segments/:key' },
    }),
    entry({ revision: 9, source: { type: 'change_request', id: 4, requestedBy: ann } }),
  ],
  nextCursor: null,
}

/** Answers the users list and each audit URL from `pages` (404 for any other path), recording what was asked. */
function serve(pages: Record<string, unknown>) {
  const users = [
    { id: 1, email: 'ann@example.com', name: 'Ann', role: 'editor', created_at: '2026-11-01T00:00:00Z' },
    { id: 2, email: 'bob@example.com', name: 'Bob', role: 'admin', created_at: '2026-11-01T00:00:00Z' },
  ]
  const fetch = vi.fn(async (input: RequestInfo | URL) => {
    const url = String(input)
    const body = url === '/api/users' ? users : pages[url]
    if (body === undefined)
      return new Response(JSON.stringify({ error: 'no such page', code: 'not_found' }), { status: 404 })
    return new Response(JSON.stringify(body), { status: 200 })
  })
  vi.stubGlobal('fetch', fetch)
  return fetch
}
const rowTexts = () =>
  screen
    .getAllByRole('listitem')
    .filter((li) => li.hasAttribute('data-revision'))
    .map((li) => li.querySelector('p')?.textContent)

describe('history rows', () => {
  it('name a scheduled change’s schedule', () => {
    const scheduled = entry({ actor: ann, source: { type: 'schedule', id: 12, createdBy: ann, approvedBy: bob } })
    expect(sourceOf(scheduled)).toBe('applied schedule #12')
  })

  it('renders a flag’s history as sentences with display names, and the segment it uses', async () => {
    expect(serviceAuditPageSchema.safeParse(page).success).toBe(true)
    const url = '/api/environments/prod/flags/checkout/history?limit=50'
    const fetch = serve({ [url]: page })
    render(<History url={url} title="History of checkout" environmentName={() => 'Production'} />, {
      wrapper: QueryWrapper,
    })
    await settle()
    expect(rowTexts()).toEqual([
      expect.stringMatching(/^Ann changed the rules of segment beta, a segment this flag uses/),
      expect.stringMatching(
        /^Bob approved change request #4 by Ann: turned checkout on in Production.*change request #4$/,
      ),
    ])
    expect(fetch).toHaveBeenCalledWith(url, expect.anything())
    const keys = [...document.querySelectorAll('li[data-revision] .sentence code')].map((c) => c.textContent)
    expect(keys).toEqual(['beta', 'checkout'])
  })

  it('loads older pages with the last page’s cursor, below the newer ones', async () => {
    const url = '/api/projects/p1/changes?limit=1'
    const newer = { entries: [entry({ revision: 12, actor: bob })], nextCursor: '12' }
    const older = { entries: [entry({ revision: 9, action: 'create', before: null, actor: ann })], nextCursor: null }
    const fetch = serve({ [url]: newer, [`${url}&cursor=12`]: older })
    render(<History url={url} title="Changes in P1" environmentName={() => 'Production'} />, { wrapper: QueryWrapper })
    await settle()
    expect(rowTexts()).toEqual([expect.stringMatching(/^Bob turned checkout on in Production/)])
    fireEvent.click(screen.getByRole('button', { name: 'Load older changes' }))
    await settle()
    expect(fetch).toHaveBeenCalledWith(`${url}&cursor=12`, expect.anything())
    expect(rowTexts()).toEqual([
      expect.stringMatching(/^Bob turned checkout on in Production/),
      expect.stringMatching(/^Ann created checkout in Production/),
    ])
    expect(screen.queryByRole('button', { name: 'Load older changes' })).toBeNull()
  })

  it('says a flag was archived, never listing the archive record as JSON', async () => {
    const url = '/api/projects/p1/changes?limit=50'
    const archived = { at: '2026-11-28T12:00:00.000Z', by: 'bob@example.com', flags: { prod: { key: 'theme' } } }
    const archive = entry({
      environment_id: null,
      key: 'theme',
      before: { key: 'theme', tags: ['web'], owner: 1, archived: null },
      after: { key: 'theme', tags: ['web'], owner: 1, archived },
      changedFields: ['archived'],
      source: { type: 'api', route: 'POST /api/projects/:project_id/flags/:key/archive' },
    })
    serve({ [url]: { entries: [archive], nextCursor: null } })
    render(<History url={url} title="Changes in P1" environmentName={() => 'Production'} />, { wrapper: QueryWrapper })
    await settle()
    expect(rowTexts()).toEqual([expect.stringMatching(/^Bob archived theme/)])
    expect(document.querySelector('ul.changes')?.textContent ?? '').not.toContain('"at"')
  })

  it("shows the service's error and code when the history cannot be read, not an empty history", async () => {
    const body = { error: 'project not found or not visible to you', code: 'not_found' }
    vi.stubGlobal('fetch', async (input: RequestInfo | URL) =>
      String(input) === '/api/users' ? new Response('[]') : new Response(JSON.stringify(body), { status: 404 }),
    )
    render(<History url="/api/projects/gone/changes?limit=100" title="Changes in Gone" />, { wrapper: QueryWrapper })
    await settle()
    const alert = screen.getByRole('alert')
    expect(alert.textContent).toBe('project not found or not visible to you (not_found)')
    expect(alert.dataset.code).toBe('not_found')
    expect(screen.queryByText('No changes recorded.')).toBeNull()
  })
})
