// @vitest-environment happy-dom

import { act, cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { Members, SdkKeys } from '../src/access.js'
import { QueryWrapper, resetQueryClient } from './query-wrapper.js'

afterEach(() => {
  cleanup()
  resetQueryClient()
  vi.unstubAllGlobals()
})

const settle = () => act(async () => new Promise((resolve) => setTimeout(resolve, 20)))

/** A service answering every path with `status` and `body`; records the paths asked. */
function stubService(answer: (path: string) => { status: number; body: unknown }) {
  const asked: string[] = []
  vi.stubGlobal('fetch', async (path: string) => {
    asked.push(path)
    const { status, body } = answer(path)
    return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })
  })
  return asked
}

describe("the project's SDK keys and members", () => {
  it("shows the service's error and code when the SDK keys cannot be read, not an empty list", async () => {
    const body = { error: 'needs the project admin role', code: 'forbidden' }
    stubService(() => ({ status: 403, body }))
    render(<SdkKeys projectId="p1" environments={[]} canAdmin reason="" />, { wrapper: QueryWrapper })
    await settle()
    const alert = screen.getByRole('alert')
    expect(alert.textContent).toBe('needs the project admin role (forbidden)')
    expect(alert.dataset.code).toBe('forbidden')
  })

  it('shows why the workspace users could not be read, and reads members and users once each', async () => {
    const asked = stubService((path) =>
      path === '/api/users'
        ? { status: 500, body: { error: 'database is locked', code: 'internal' } }
        : { status: 200, body: [{ user_id: 1, email: 'a@example.com', name: 'A', role: 'admin' }] },
    )
    render(
      <>
        <Members projectId="p1" canAdmin reason="" />
        <Members projectId="p1" canAdmin reason="" />
      </>,
      { wrapper: QueryWrapper },
    )
    await settle()
    expect(screen.getAllByRole('alert').map((a) => a.textContent)).toEqual([
      'database is locked (internal)',
      'database is locked (internal)',
    ])
    expect(asked.filter((p) => p === '/api/projects/p1/members')).toHaveLength(1)
    expect(asked.filter((p) => p === '/api/users')).toHaveLength(1)
  })

  it('changes a member to the role chosen in the select', async () => {
    const writes: Array<{ method: string; path: string; body: unknown }> = []
    vi.stubGlobal('fetch', async (path: string, init: RequestInit) => {
      const method = init.method ?? 'GET'
      if (method !== 'GET') writes.push({ method, path, body: JSON.parse(String(init.body)) })
      const body = path === '/api/users' ? [] : [{ user_id: 2, email: 'b@example.com', name: 'B', role: 'viewer' }]
      return new Response(JSON.stringify(method === 'GET' ? body : {}), { status: 200 })
    })
    render(<Members projectId="p1" canAdmin reason="" />, { wrapper: QueryWrapper })
    await settle()
    fireEvent.change(screen.getByLabelText('Role of b@example.com'), { target: { value: 'editor' } })
    await settle()
    expect(writes).toEqual([{ method: 'PATCH', path: '/api/projects/p1/members/2', body: { role: 'editor' } }])
  })
})
