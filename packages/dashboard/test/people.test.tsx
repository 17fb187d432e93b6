// @vitest-environment happy-dom

import { QueryClient, QueryObserver } from '@tanstack/react-query'
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { Account, passwordErrorText } from '../src/account.js'
import { ApiError } from '../src/api.js'
import { LiveFlags } from '../src/live-flags.js'
import { describePeopleEntry } from '../src/people-activity.js'
import { queryKeys } from '../src/query-keys.js'
import { SESSION_ENDED, sessionEventsFor } from '../src/session-events.js'
import type { Me } from '../src/types.js'
import { Users } from '../src/users.js'
import { QueryWrapper, resetQueryClient } from './query-wrapper.js'

afterEach(() => {
  cleanup()
  resetQueryClient()
  vi.unstubAllGlobals()
})

const settle = () => act(async () => new Promise((resolve) => setTimeout(resolve, 20)))
const alice: Me = { id: 1, email: 'alice@example.com', name: 'Alice', role: 'admin', workspace_name: 'W' }
const bob: Me = { id: 2, email: 'bob@example.com', name: 'Bob', role: 'editor', workspace_name: 'W' }
const users = [alice, bob].map(({ workspace_name: _, ...u }) => ({ ...u, created_at: '2026-11-01T00:00:00Z' }))
const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status })

/** The service as far as these pages ask it: `routes` by "METHOD path"; anything else is a 404. */
function serve(routes: Record<string, () => Response>) {
  const fetch = vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    const route = routes[`${init?.method ?? 'GET'} ${String(input)}`]
    return route ? route() : json({ error: 'no such route', code: 'not_found' }, 404)
  })
  vi.stubGlobal('fetch', fetch)
  return fetch
}

describe('people activity sentences', () => {
  const nameOf = (id: number) => ({ 1: 'Alice', 2: 'Bob' })[id] ?? `user #${id}`
  const base = { id: 1, at: '2026-11-28T10:00:00.000Z', actor: 1, target_user_id: 2 }
  it('say who changed whose role and name, and who reset or changed a password', () => {
    const role = { from: 'editor', to: 'admin' } as const
    expect(describePeopleEntry({ ...base, action: 'user.updated', details: { role } }, nameOf)).toBe(
      'Alice changed Bob’s role from editor to admin',
    )
    const both = { role, name: { from: 'Bob', to: 'Robert' } }
    expect(describePeopleEntry({ ...base, action: 'user.updated', details: both }, nameOf)).toBe(
      'Alice changed Bob’s role from editor to admin and renamed Bob to Robert',
    )
    const reset = { sessions_ended: 2, tokens_revoked: 1 }
    expect(describePeopleEntry({ ...base, action: 'user.password_reset', details: reset }, nameOf)).toBe(
      'Alice reset Bob’s password (2 sessions ended, 1 token revoked)',
    )
    const own = { ...base, actor: 9, target_user_id: 9, action: 'user.password_changed' as const }
    expect(describePeopleEntry({ ...own, details: { sessions_ended: 1 } }, nameOf)).toBe(
      'user #9 changed their own password (1 other session ended)',
    )
  })

  it('leave out bidirectional controls a stored name holds', () => {
    const spoofed = (id: number) => (id === 2 ? 'Bob\u202E' : nameOf(id))
    const name = { from: 'Bob\u202E', to: 'Rob\u2066ert' }
    expect(describePeopleEntry({ ...base, action: 'user.updated', details: { name } }, spoofed)).toBe(
      'Alice renamed Bob to Robert',
    )
  })

  it('say who added or deleted whom, naming a deleted user from their entry', async () => {
    const carol = { name: 'Carol', email: 'carol@example.com', role: 'editor' } as const
    const created = { ...base, target_user_id: 3, action: 'user.created' as const, details: carol }
    const deleted = { ...created, id: 2, action: 'user.deleted' as const }
    expect(describePeopleEntry(created, nameOf)).toBe('Alice added Carol (carol@example.com) as editor')
    expect(describePeopleEntry(deleted, nameOf)).toBe('Alice deleted Carol (carol@example.com)')
    const renamed = { ...base, id: 1, target_user_id: 3, action: 'user.updated' as const }
    const entries = [deleted, { ...renamed, details: { role: { from: 'viewer', to: 'editor' } as const } }]
    serve({
      'GET /api/users': () => json(users),
      'GET /api/users/audit?limit=20': () => json({ entries, nextCursor: null }),
    })
    render(<Users me={alice} offline={false} />, { wrapper: QueryWrapper })
    await settle()
    expect(screen.getAllByRole('listitem').map((li) => li.querySelector('.sentence')?.textContent)).toEqual([
      'Alice deleted Carol (carol@example.com)',
      'Alice changed Carol’s role from viewer to editor',
    ])
  })
})

describe('the Users page', () => {
  it("shows an admin the role select, and the service's refusal to demote the last admin", async () => {
    const refusal = { error: 'cannot demote the last admin: make another user admin first', code: 'conflict' }
    const fetch = serve({
      'GET /api/users': () => json(users),
      'GET /api/users/audit?limit=20': () => json({ entries: [], nextCursor: null }),
      'PATCH /api/users/1': () => json(refusal, 409),
    })
    render(<Users me={alice} offline={false} />, { wrapper: QueryWrapper })
    await settle()
    const select = screen.getByLabelText('Workspace role of alice@example.com') as HTMLSelectElement
    fireEvent.change(select, { target: { value: 'editor' } })
    await settle()
    expect(fetch).toHaveBeenCalledWith('/api/users/1', expect.objectContaining({ method: 'PATCH' }))
    expect(screen.getByRole('alert').textContent).toBe(`${refusal.error} (conflict)`)
    expect(select.value).toBe('admin')
    expect(screen.getByRole('heading', { name: 'People activity' })).toBeTruthy()
    expect(screen.getByRole('button', { name: 'Reset password for alice@example.com' })).toHaveProperty(
      'disabled',
      true,
    )
  })

  it('shows others the roles as text, without actions or the activity', async () => {
    const fetch = serve({ 'GET /api/users': () => json(users) })
    render(<Users me={bob} offline={false} />, { wrapper: QueryWrapper })
    await settle()
    expect(screen.queryByLabelText('Workspace role of alice@example.com')).toBeNull()
    expect(screen.queryByRole('button', { name: 'Rename alice@example.com' })).toBeNull()
    expect(screen.queryByRole('heading', { name: 'People activity' })).toBeNull()
    expect(fetch).not.toHaveBeenCalledWith(expect.stringContaining('/api/users/audit'), expect.anything())
  })
})

describe('the account page', () => {
  const fill = (label: string, value: string) => fireEvent.change(screen.getByLabelText(label), { target: { value } })
  it("changes the password with the current one, and shows the service's answer to a wrong one", async () => {
    let answer = json({ error: 'current_password is wrong', code: 'forbidden', attempts_remaining: 3 }, 403)
    const fetch = serve({ 'POST /api/auth/password': () => answer })
    render(<Account me={bob} offline={false} />, { wrapper: QueryWrapper })
    fill('Current password', 'not-it-at-all')
    fill('New password', 'a brand new one')
    fill('Confirm new password', 'a brand new one')
    fireEvent.submit(screen.getByRole('button', { name: 'Change password' }))
    await settle()
    expect(screen.getByRole('alert').textContent).toBe(
      'The current password is wrong. 3 attempts left before sign-in is locked for 15 minutes.',
    )
    const [, init] = fetch.mock.calls[0] ?? []
    expect(JSON.parse(String(init?.body))).toEqual({
      current_password: 'not-it-at-all',
      new_password: 'a brand new one',
    })
    answer = new Response(null, { status: 204 })
    fill('Current password', 'the right one')
    fireEvent.submit(screen.getByRole('button', { name: 'Change password' }))
    await settle()
    expect(screen.getByRole('status').textContent).toContain('Password changed')
  })

  it('sends nothing while the new passwords differ', async () => {
    const fetch = serve({})
    render(<Account me={bob} offline={false} />, { wrapper: QueryWrapper })
    fill('Current password', 'current-one')
    fill('New password', 'a brand new one')
    fill('Confirm new password', 'a brand new two')
    fireEvent.submit(screen.getByRole('button', { name: 'Change password' }))
    await settle()
    expect(screen.getByRole('alert').textContent).toBe('The new passwords do not match.')
    expect(fetch).not.toHaveBeenCalled()
  })

  it('says when a locked account may try again', () => {
    const locked = new ApiError(429, { error: 'too many', code: 'rate_limited', retry_after_seconds: 600 })
    expect(passwordErrorText(locked)).toMatch(
      /^Too many wrong passwords: changing your password and signing in are locked\. Try again in 10 minutes \(at .+\)\.$/,
    )
  })
})

describe('people events', () => {
  it('a project stream hands people events and drops to the signed-in shell', () => {
    const handlers = new Map<string, (e: { data?: string }) => void>()
    const source = {
      onerror: null,
      addEventListener: (name: string, fn: (e: { data?: string }) => void) => handlers.set(name, fn),
      close: () => {},
    }
    const live = new LiveFlags(['e1'], { read: () => undefined, write: () => {} }, () => source as never)
    const seen: string[] = []
    live.onSessionEvents({ people: (e) => seen.push(`${e.user_id} ${e.action}`), dropped: () => seen.push('dropped') })
    live.start()
    handlers.get('people')?.({ data: JSON.stringify({ user_id: 2, action: 'user.updated' }) })
    handlers.get('people')?.({ data: 'not json' })
    handlers.get('error')?.({})
    expect(seen).toEqual(['2 user.updated', 'dropped'])
  })

  it("re-reads the user named, and keeps the service's reason only when their session ended", async () => {
    let me: Me | null = bob
    serve({
      'GET /api/auth/me': () => (me ? json(me) : json({ error: 'no valid session', code: 'unauthorized' }, 401)),
    })
    const client = new QueryClient()
    // The shell's `me` query, observed as the page observes it (only observed queries refetch on invalidation).
    const observer = new QueryObserver(client, {
      queryKey: queryKeys.me(),
      queryFn: async () => {
        const res = await fetch('/api/auth/me')
        return res.status === 401 ? null : ((await res.json()) as Me)
      },
    })
    const stop = observer.subscribe(() => {})
    await settle()
    const reason = { current: null as string | null }
    const events = sessionEventsFor(client, bob.id, reason)
    me = { ...bob, role: 'admin' }
    events.people({ user_id: alice.id, action: 'user.updated' })
    await settle()
    expect(client.getQueryData<Me>(queryKeys.me())?.role).toBe('editor') // someone else: who I am is unchanged
    events.people({ user_id: bob.id, action: 'user.updated' })
    await settle()
    expect(client.getQueryData<Me>(queryKeys.me())?.role).toBe('admin')
    me = null
    events.people({ user_id: bob.id, action: 'user.password_reset' })
    await settle()
    expect(client.getQueryData(queryKeys.me())).toBeNull()
    expect(reason.current).toBe('A workspace admin reset your password. Sign in with the new one.')
    events.people({ user_id: bob.id, action: 'user.deleted' })
    await settle()
    expect(reason.current).toBe('A workspace admin deleted your account.')
    expect(SESSION_ENDED).toMatch(/^Your session ended/)
    stop()
  })
})
