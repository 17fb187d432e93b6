// @vitest-environment happy-dom
// @vitest-environment-options {"settings":{"fetch":{"disableSameOriginPolicy":true}}}

import type { FlagClient } from '@flagsync/sync-client'
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react'
import { IDBKeyRange } from 'fake-indexeddb'
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest'
import {
  FlagsyncProvider,
  useFlag,
  useFlagClient,
  useFlagDetails,
  useFlagStatus,
  useFlags,
  usePendingChanges,
  useSyncStatus,
} from '../src/index.js'
import { closeAll, setUp, track } from './support.js'

/** Renders per component name, reset before each test. */
let counts: Record<string, number> = {}
const count = (name: string) => {
  counts[name] = (counts[name] ?? 0) + 1
}
/** What the probes of a test saw. */
let seen: Record<string, unknown> = {}
let probedClient: FlagClient | undefined

afterEach(async () => {
  cleanup()
  counts = {}
  seen = {}
  probedClient = undefined
  await closeAll()
})

function A() {
  count('A')
  // Inline context and fallback objects: new every render, equal in content.
  const on = useFlag('a', false, { user_id: 'u-1' })
  const settings = useFlag('settings', { theme: 'light' })
  return <p data-testid="a">{`a ${on ? 'on' : 'off'} ${settings.theme}`}</p>
}

function B() {
  count('B')
  return <p data-testid="b">{`b ${useFlag('b', false) ? 'on' : 'off'}`}</p>
}

function List() {
  count('List')
  return (
    <p data-testid="list">
      {useFlags()
        .map((f) => `${f.key}:${f.is_enabled}`)
        .join(' ')}
    </p>
  )
}

function User({ id }: { id: string }) {
  return <li>{`${id}:${useFlag('rollout', false, { user_id: id })}`}</li>
}

function Typed() {
  const asBoolean = useFlag('on', false)
  const asString = useFlag('on', 'text')
  const missing = useFlagDetails('nope', 7)
  expectTypeOf(asBoolean).toEqualTypeOf<boolean>()
  expectTypeOf(asString).toEqualTypeOf<string>()
  expectTypeOf(missing.value).toEqualTypeOf<number>()
  expectTypeOf(useFlag('on', { a: 1 })).toEqualTypeOf<{ a: number }>()
  Object.assign(seen, { asBoolean, asString: useFlagDetails('on', 'text'), missing })
  return null
}

function Editor() {
  const client = useFlagClient()
  const on = useFlag('checkout', false)
  const pending = usePendingChanges('flags')
  const status = useSyncStatus()
  const stream = useFlagStatus()
  return (
    <div>
      <p data-testid="value">{`checkout ${on ? 'on' : 'off'}`}</p>
      <p data-testid="pending">{pending.map((e) => `${e.operation.action}:${e.operation.recordId}`).join(',')}</p>
      <p data-testid="sync">{`${status?.state ?? 'unknown'} ${status?.pending ?? '-'}`}</p>
      <p data-testid="stream">{stream.state}</p>
      <button type="button" onClick={() => void client?.updateFlag('checkout', { is_enabled: !on })}>
        toggle
      </button>
    </div>
  )
}

function Outbox() {
  count('Outbox')
  const status = useSyncStatus()
  const pending = usePendingChanges()
  return <p data-testid="outbox">{`${status?.state ?? 'unknown'} ${pending.length}`}</p>
}

function ClientProbe() {
  probedClient = useFlagClient()
  return <p data-testid="a">{`a ${useFlag('a', false) ? 'on' : 'off'}`}</p>
}

describe('hooks against the real flat API server', () => {
  it('re-renders a component when its flag is toggled on the server, and only that component', async () => {
    const { flags, put, sync } = await setUp([
      { key: 'a', is_enabled: true },
      { key: 'b', is_enabled: false },
    ])
    await flags.ready()
    render(
      <FlagsyncProvider client={flags}>
        <A />
        <B />
        <List />
      </FlagsyncProvider>,
    )
    expect(screen.getByTestId('a').textContent).toBe('a on light')
    expect(screen.getByTestId('b').textContent).toBe('b off')
    expect(screen.getByTestId('list').textContent).toBe('a:true b:false')
    expect(counts).toEqual({ A: 1, B: 1, List: 1 })

    await put({ key: 'b', is_enabled: true })
    await expect.poll(() => screen.getByTestId('b').textContent).toBe('b on')
    expect(screen.getByTestId('list').textContent).toBe('a:true b:true')
    expect(counts).toEqual({ A: 1, B: 2, List: 2 })

    // Outbox traffic of another collection and stream status changes: nothing to render.
    for (let i = 0; i < 5; i++) await sync.insert('notes', { id: `n${i}`, text: 'x' })
    await new Promise((r) => setTimeout(r, 200))
    expect(counts).toEqual({ A: 1, B: 2, List: 2 })

    await put({ key: 'b', is_enabled: false })
    await expect.poll(() => screen.getByTestId('b').textContent).toBe('b off')
    expect(counts).toEqual({ A: 1, B: 3, List: 3 })
  })

  it('evaluates with the context: a rollout is decided per user, the same as the client evaluates it', async () => {
    const { flags } = await setUp([{ key: 'rollout', is_enabled: true, rollout_percentage: 50 }])
    await flags.ready()
    const users = Array.from({ length: 20 }, (_, i) => `user-${i}`)
    render(
      <FlagsyncProvider client={flags}>
        <ul data-testid="users">
          {users.map((id) => (
            <User key={id} id={id} />
          ))}
        </ul>
      </FlagsyncProvider>,
    )
    const expected = users.map((id) => `${id}:${flags.isEnabled('rollout', { user_id: id })}`).join('')
    expect(screen.getByTestId('users').textContent).toBe(expected)
    // Both outcomes occur, so the context really reaches the evaluator.
    expect(expected).toContain(':true')
    expect(expected).toContain(':false')
  })

  it('types values by the fallback and falls back on a missing flag or another kind of value', async () => {
    const { flags } = await setUp([{ key: 'on', is_enabled: true }])
    await flags.ready()
    render(
      <FlagsyncProvider client={flags}>
        <Typed />
      </FlagsyncProvider>,
    )
    expect(seen.asBoolean).toBe(true)
    expect(seen.asString).toMatchObject({ value: 'text', reason: 'ERROR', errorCode: 'TYPE_MISMATCH', flagFound: true })
    expect(seen.missing).toMatchObject({ value: 7, flagFound: false, errorCode: 'FLAG_NOT_FOUND' })
  })

  it('shows an offline edit at once, lists it as pending, and delivers it when back online', async () => {
    const { flags, sync, online, serverFlag } = await setUp([{ key: 'checkout', is_enabled: true }], { online: false })
    await flags.ready()
    render(
      <FlagsyncProvider client={flags} syncClient={sync}>
        <Editor />
      </FlagsyncProvider>,
    )
    expect(screen.getByTestId('value').textContent).toBe('checkout on')
    await expect.poll(() => screen.getByTestId('sync').textContent).toBe('offline 0')

    fireEvent.click(screen.getByRole('button', { name: 'toggle' }))
    await expect.poll(() => screen.getByTestId('value').textContent).toBe('checkout off')
    await expect.poll(() => screen.getByTestId('pending').textContent).toBe('update:checkout')
    await expect.poll(() => screen.getByTestId('sync').textContent).toBe('offline 1')
    expect((await serverFlag('checkout')).is_enabled).toBe(true)

    await act(async () => {
      online.setOnline(true)
      sync.start()
    })
    await expect.poll(async () => (await serverFlag('checkout')).is_enabled).toBe(false)
    await expect.poll(() => screen.getByTestId('pending').textContent).toBe('')
    await expect.poll(() => screen.getByTestId('sync').textContent).toBe('idle 0')
    expect(screen.getByTestId('value').textContent).toBe('checkout off')
    expect(screen.getByTestId('stream').textContent).toBe('live')
  })

  it('re-reads the outbox on every sync notification but renders only when status or entries differ', async () => {
    const { flags, sync } = await setUp([], { online: false })
    render(
      <FlagsyncProvider client={flags} syncClient={sync}>
        <Outbox />
      </FlagsyncProvider>,
    )
    await sync.insert('notes', { id: 'n1', text: 'x' })
    await expect.poll(() => screen.getByTestId('outbox').textContent).toBe('offline 1')
    await new Promise((r) => setTimeout(r, 100))
    const settled = counts.Outbox
    let notifications = 0
    const off = sync.subscribe(() => notifications++)
    await new Promise((r) => setTimeout(r, 100))
    const before = notifications
    // Each call notifies subscribers although nothing changed.
    for (let i = 0; i < 5; i++) await sync.discard([999_999])
    await expect.poll(() => notifications).toBeGreaterThanOrEqual(before + 1)
    await new Promise((r) => setTimeout(r, 200))
    off()
    expect(counts.Outbox).toBe(settled)

    await sync.insert('notes', { id: 'n2', text: 'y' })
    await expect.poll(() => screen.getByTestId('outbox').textContent).toBe('offline 2')
  })

  it('creates a client from url after mounting, follows the server, and closes it on unmount', async () => {
    const { server, put, indexedDB } = await setUp([{ key: 'a', is_enabled: false }])
    const view = render(
      <FlagsyncProvider url={`${server.url}/stream`} options={{ indexedDB, IDBKeyRange }}>
        <ClientProbe />
      </FlagsyncProvider>,
    )
    await expect.poll(() => probedClient?.status().state).toBe('live')
    const created = probedClient as FlagClient
    track(() => created.close())
    expect(screen.getByTestId('a').textContent).toBe('a off')
    await put({ key: 'a', is_enabled: true })
    await expect.poll(() => screen.getByTestId('a').textContent).toBe('a on')
    view.unmount()
    await expect.poll(() => created.status().state).toBe('closed')
  })
})
