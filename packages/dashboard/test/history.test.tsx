// @vitest-environment happy-dom

import { type ServiceAuditEntryWire, serviceAuditPageSchema } from '@flagsync/protocol'
import { act, cleanup, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { byOf, History, headlineOf, sourceOf } from '../src/history.js'
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

describe('history rows', () => {
  it('name the requester and the approver of a change request, one actor otherwise', () => {
    expect(byOf(entry({ source: { type: 'change_request', id: 4, requestedBy: ann } }))).toBe(
      'requested by ann@example.com, approved by bob@example.com',
    )
    expect(byOf(entry({ source: { type: 'change_request', id: 4 } }))).toBe('by bob@example.com')
    expect(byOf(entry({}))).toBe('by bob@example.com')
    expect(headlineOf(entry({}))).toBe('update checkout')
    expect(headlineOf(entry({ collection: 'segments', key: 'beta' }), true)).toBe(
      'update segment beta, which this flag uses',
    )
  })

  it('name the creator and the approver of a scheduled change, and its schedule', () => {
    const scheduled = entry({ actor: ann, source: { type: 'schedule', id: 12, createdBy: ann, approvedBy: bob } })
    expect(byOf(scheduled)).toBe('scheduled by ann@example.com, approved by bob@example.com')
    expect(sourceOf(scheduled)).toBe('applied schedule #12')
    expect(byOf(entry({ actor: ann, source: { type: 'schedule', id: 13, createdBy: ann } }))).toBe(
      'scheduled by ann@example.com',
    )
  })

  it('renders a flag’s history with “requested by A, approved by B” and the segment it uses', async () => {
    expect(serviceAuditPageSchema.safeParse(page).success).toBe(true)
    const fetch = vi.fn(async () => new Response(JSON.stringify(page), { status: 200 }))
    vi.stubGlobal('fetch', fetch)
    render(<History url="/api/environments/prod/flags/checkout/history?limit=50" title="History of checkout" />, {
      wrapper: QueryWrapper,
    })
    await settle()
    const rows = screen.getAllByRole('listitem').filter((li) => li.hasAttribute('data-revision'))
    expect(rows.map((li) => li.querySelector('p')?.textContent)).toEqual([
      expect.stringMatching(/^update segment beta, which this flag uses by ann@example\.com, /),
      expect.stringMatching(
        /^update checkout requested by ann@example\.com, approved by bob@example\.com, .*change request #4$/,
      ),
    ])
    expect(fetch).toHaveBeenCalledWith('/api/environments/prod/flags/checkout/history?limit=50', expect.anything())
  })

  it("shows the service's error and code when the history cannot be read, not an empty history", async () => {
    const body = { error: 'project not found or not visible to you', code: 'not_found' }
    vi.stubGlobal('fetch', async () => new Response(JSON.stringify(body), { status: 404 }))
    render(<History url="/api/projects/gone/changes?limit=100" title="Changes in Gone" />, { wrapper: QueryWrapper })
    await settle()
    const alert = screen.getByRole('alert')
    expect(alert.textContent).toBe('project not found or not visible to you (not_found)')
    expect(alert.dataset.code).toBe('not_found')
    expect(screen.queryByText('No changes recorded.')).toBeNull()
  })
})
