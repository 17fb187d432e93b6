// @vitest-environment happy-dom

import { persistQueryClientRestore, persistQueryClientSave } from '@tanstack/react-query-persist-client'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ApiError, api } from '../src/api.js'
import { createQueryClient, persistOptions } from '../src/query-client.js'
import { queryKeys } from '../src/query-keys.js'

afterEach(() => localStorage.clear())

// The persister packages type the client with the query-core patch they pin; at run time any client does.
type PersistedClient = Parameters<typeof persistQueryClientSave>[0]['queryClient']
const asPersisted = (client: ReturnType<typeof createQueryClient>) => client as unknown as PersistedClient

/** Saves `client` as the page's persister does, then restores it into a new client: the next visit's start. */
async function nextVisit(save: (client: ReturnType<typeof createQueryClient>) => void) {
  const options = persistOptions(localStorage)
  const before = createQueryClient()
  save(before)
  await persistQueryClientSave({ queryClient: asPersisted(before), ...options })
  // The persister writes at most every 200 ms, at the end of that window.
  await new Promise((resolve) => setTimeout(resolve, 300))
  expect(localStorage.getItem('flagsync.dashboard.cache')).not.toBeNull()
  const after = createQueryClient()
  await persistQueryClientRestore({ queryClient: asPersisted(after), ...options })
  return after
}

describe('the persisted query cache (an offline start)', () => {
  it('brings back the flags as maps (environment → key → flag), the user and the projects', async () => {
    const flags = new Map([['prod', new Map([['checkout', { key: 'checkout', is_enabled: true }]])]])
    const me = { id: 1, email: 'a@example.com', name: 'A', role: 'admin', workspace_name: 'W' }
    const after = await nextVisit((client) => {
      client.setQueryData(queryKeys.liveFlags('p1'), flags)
      client.setQueryData(queryKeys.me(), me)
      client.setQueryData(queryKeys.projects(), [{ id: 'p1', name: 'Checkout' }])
    })
    const restored = after.getQueryData<typeof flags>(queryKeys.liveFlags('p1'))
    expect(restored).toBeInstanceOf(Map)
    expect(restored?.get('prod')?.get('checkout')).toEqual({ key: 'checkout', is_enabled: true })
    expect(after.getQueryData(queryKeys.me())).toEqual(me)
    expect(after.getQueryData(queryKeys.projects())).toEqual([{ id: 'p1', name: 'Checkout' }])
  })

  it("brings back an editable copy's flags as a map, and leaves maps' look-alikes inside flags as they are", async () => {
    const flag = { key: 'checkout', is_enabled: true, flag_type: 'json', default_value: { $map: [['a', 1]] } }
    const after = await nextVisit((client) => {
      client.setQueryData(queryKeys.editableFlags('prod'), { envId: 'prod', flags: new Map([['checkout', flag]]) })
    })
    const copy = after.getQueryData<{ envId: string; flags: Map<string, unknown> }>(queryKeys.editableFlags('prod'))
    expect(copy?.envId).toBe('prod')
    expect(copy?.flags).toBeInstanceOf(Map)
    // A json flag's value is the flag's own data: it comes back exactly as it was served.
    expect(copy?.flags.get('checkout')).toEqual(flag)
  })

  it('keeps no impressions, history or change requests: they need the service anyway', async () => {
    const after = await nextVisit((client) => {
      client.setQueryData(queryKeys.history('/api/projects/p1/changes'), { entries: [] })
      client.setQueryData(queryKeys.impressionStats('prod'), [])
      client.setQueryData(queryKeys.changeRequests(['prod'], 'pending'), { requests: [] })
    })
    expect(after.getQueryCache().getAll()).toEqual([])
  })

  it('keeps what a query last answered when its refetch got no answer, not when the service refused it', async () => {
    const projects = [{ id: 'p1', name: 'Checkout' }]
    const after = await nextVisit((client) => {
      client.setQueryData(queryKeys.projects(), projects)
      client.setQueryData(queryKeys.me(), { id: 1, email: 'a@example.com', name: 'A', role: 'admin' })
      const failed = (key: readonly unknown[], error: ApiError) =>
        client.getQueryCache().find({ queryKey: key })?.setState({ status: 'error', error, fetchStatus: 'idle' })
      failed(queryKeys.projects(), new ApiError(0, { error: 'the service cannot be reached' }))
      failed(queryKeys.me(), new ApiError(401, { error: 'sign in again', code: 'unauthorized' }))
    })
    expect(after.getQueryData(queryKeys.projects())).toEqual(projects)
    expect(after.getQueryData(queryKeys.me())).toBeUndefined()
  })

  it('a refused read is not retried; a read that got no answer is, once', async () => {
    const refused = vi.fn(async () => new Response(JSON.stringify({ error: 'no', code: 'forbidden' }), { status: 403 }))
    vi.stubGlobal('fetch', refused)
    const client = createQueryClient()
    await expect(client.fetchQuery({ queryKey: ['refused'], queryFn: () => api('GET', '/x') })).rejects.toThrow('no')
    expect(refused).toHaveBeenCalledTimes(1)
    const unanswered = vi.fn(async () => {
      throw new TypeError('Failed to fetch')
    })
    vi.stubGlobal('fetch', unanswered)
    await expect(client.fetchQuery({ queryKey: ['unanswered'], queryFn: () => api('GET', '/x') })).rejects.toThrow(
      'the service cannot be reached',
    )
    expect(unanswered).toHaveBeenCalledTimes(2)
    vi.unstubAllGlobals()
  })
})
