// @vitest-environment happy-dom
// @vitest-environment-options {"settings":{"fetch":{"disableSameOriginPolicy":true}}}

import type { Conflict } from '@flagsync/sync-client'
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import { FlagsyncProvider, useConflicts, useFlags } from '../src/index.js'
import { closeAll, setUp } from './support.js'

let renders = 0
const snapshots: Array<readonly Conflict[]> = []

afterEach(async () => {
  cleanup()
  renders = 0
  snapshots.length = 0
  await closeAll()
})

function Conflicts({ onResolve }: { onResolve: (id: number) => void }) {
  renders++
  const conflicts = useConflicts('flags')
  snapshots.push(conflicts)
  return (
    <ul data-testid="conflicts">
      {conflicts.length === 0 ? <li>none</li> : null}
      {conflicts.map((c) => (
        <li key={c.id}>
          {`${c.recordId}: ${c.fields.join(',')}`}
          <button type="button" onClick={() => onResolve(c.id)}>
            keep mine
          </button>
        </li>
      ))}
    </ul>
  )
}

function Rollout() {
  const flag = useFlags().find((f) => f.key === 'checkout')
  return <p data-testid="rollout">{String(flag?.rollout_percentage)}</p>
}

describe('useConflicts against the real flat API server', () => {
  it('lists the sync client’s conflicts as a stable snapshot, and empties once one is resolved', async () => {
    const { flags, sync, online, server, serverFlag } = await setUp([{ key: 'checkout', is_enabled: true }], {
      online: false,
    })
    await flags.ready()
    render(
      <FlagsyncProvider client={flags} syncClient={sync}>
        <Conflicts onResolve={(id) => void sync.resolve(id, 'mine')} />
        <Rollout />
      </FlagsyncProvider>,
    )
    await expect.poll(() => screen.getByTestId('conflicts').textContent).toBe('none')

    // Offline, this editor sets the rollout to 50; meanwhile someone else sets it to 10 on the server.
    await act(() => flags.updateFlag('checkout', { rollout_percentage: 50 }))
    await expect.poll(() => screen.getByTestId('rollout').textContent).toBe('50')
    await server.request('/api/flags/checkout', { method: 'PATCH', body: { rollout_percentage: 10 } })
    online.setOnline(true)
    await act(async () => {
      await sync.flush()
    })
    await expect.poll(() => screen.getByTestId('conflicts').textContent).toBe('checkout: rollout_percentagekeep mine')
    // The flag reads as the server has it while the conflict is pending.
    await expect.poll(() => screen.getByTestId('rollout').textContent).toBe('10')

    // Outbox traffic that changes no conflict: the same array, no render.
    const before = renders
    const list = snapshots.at(-1)
    await act(async () => {
      for (let i = 0; i < 3; i++) await sync.insert('flags', { key: `n${i}`, is_enabled: true }, { recordId: `n${i}` })
      await sync.flush()
      await new Promise((r) => setTimeout(r, 150))
    })
    expect(renders).toBe(before)
    expect(snapshots.at(-1)).toBe(list)

    fireEvent.click(screen.getByRole('button', { name: 'keep mine' }))
    await expect.poll(() => screen.getByTestId('conflicts').textContent).toBe('none')
    await act(async () => {
      await sync.flush()
    })
    expect((await serverFlag('checkout')).rollout_percentage).toBe(50)
    await expect.poll(() => screen.getByTestId('rollout').textContent).toBe('50')
  })

  it('is empty without a sync client', async () => {
    const { flags } = await setUp([{ key: 'x', is_enabled: true }])
    render(
      <FlagsyncProvider client={flags}>
        <Conflicts onResolve={() => {}} />
      </FlagsyncProvider>,
    )
    expect(screen.getByTestId('conflicts').textContent).toBe('none')
  })
})
