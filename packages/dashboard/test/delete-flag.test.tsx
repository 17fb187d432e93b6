// @vitest-environment happy-dom

import { act, cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { DeleteFlag, deletePlan, deleteRefusal, deleteUnavailable } from '../src/delete-flag.js'
import type { Delivery, Outbox } from '../src/flag-write.js'
import type { Environment, Role } from '../src/types.js'

afterEach(() => {
  cleanup()
  vi.unstubAllGlobals()
})

const env = (id: string, name: string, require_approval = false): Environment => ({
  id,
  name,
  slug: id,
  color: '#888',
  is_default: id === 'dev',
  require_approval,
  created_at: '2026-11-25T00:00:00Z',
})
const dev = env('dev', 'Development')
const staging = env('staging', 'Staging')
const prod = env('prod', 'Production', true)
const environments = [dev, staging, prod]
const settle = () => act(async () => new Promise((resolve) => setTimeout(resolve, 20)))

describe('who may delete a flag where (the service role table)', () => {
  it('refuses viewers everywhere and editors in an approval environment, where admins may', () => {
    expect(deleteRefusal('viewer', dev)).toBe('needs the project editor role')
    expect(deleteRefusal('editor', dev)).toBeNull()
    expect(deleteRefusal('editor', prod)).toMatch(/Production requires approval.*project admin.*cannot delete/)
    expect(deleteRefusal('admin', prod)).toBeNull()
  })

  it('deletes from every environment that has the flag, or the one chosen, and names those it keeps', () => {
    const present = (id: string) => id !== 'staging'
    const all = deletePlan('editor', environments, 'all', present)
    expect(all.targets.map((e) => e.id)).toEqual(['dev'])
    expect(all.refused.map((r) => r.env.id)).toEqual(['prod'])
    expect(deletePlan('admin', environments, 'all', present).targets.map((e) => e.id)).toEqual(['dev', 'prod'])
    expect(deletePlan('admin', environments, 'staging', present).targets).toEqual([])
    expect(deletePlan('admin', environments, 'prod', present).targets.map((e) => e.id)).toEqual(['prod'])
  })

  it('says why the control is unavailable: the first refusal, no environment, or no outbox offline', () => {
    const online = { flagKey: 'checkout', offline: false, outboxOpen: false }
    const onlyProd = (id: string) => id === 'prod'
    expect(deleteUnavailable('editor', environments, () => true, online)).toBeNull()
    expect(deleteUnavailable('editor', environments, onlyProd, online)).toMatch(/Production requires approval/)
    expect(deleteUnavailable('editor', environments, () => false, online)).toBe('checkout is in no environment')
    expect(deleteUnavailable('editor', environments, () => true, { ...online, offline: true })).toMatch(
      /outbox that queues edits offline is not open/,
    )
    expect(
      deleteUnavailable('editor', environments, () => true, { ...online, offline: true, outboxOpen: true }),
    ).toBeNull()
  })
})

/** An outbox that records each delete (environment, key, base, delivered at once) and answers `delivery`. */
function recordingOutbox(delivery: Delivery) {
  const writes: Array<[string, string, number | undefined, boolean]> = []
  const outbox: Outbox = {
    write: async (envId, op, deliver) => {
      writes.push([envId, op.recordId, op.baseRevision, deliver])
      return deliver ? delivery : { kind: 'queued', reason: null }
    },
  }
  return { outbox, writes }
}

function mount(over: { role?: Role; offline?: boolean; outbox?: Outbox | null; envId?: string } = {}) {
  const deleted: string[][] = []
  render(
    <DeleteFlag
      flagKey="checkout"
      envId={over.envId ?? 'dev'}
      environments={environments}
      role={over.role ?? 'editor'}
      offline={over.offline ?? false}
      outbox={over.outbox ?? null}
      presentIn={() => true}
      revisionOf={(id) => ({ dev: 7, staging: 8, prod: 9 })[id]}
      onDeleted={(ids) => deleted.push(ids)}
    />,
  )
  return deleted
}

describe('the Delete flag control', () => {
  it('is disabled with the reason for a viewer', () => {
    mount({ role: 'viewer' })
    const button = screen.getByRole('button', { name: 'Delete flag' }) as HTMLButtonElement
    expect(button.disabled).toBe(true)
    expect(button.title).toBe('needs the project editor role')
    expect(screen.getByText('Deleting needs the project editor role.')).toBeTruthy()
  })

  it('offline without an open outbox is disabled and says why', () => {
    mount({ offline: true, outbox: null })
    const button = screen.getByRole('button', { name: 'Delete flag' }) as HTMLButtonElement
    expect(button.disabled).toBe(true)
    expect(button.title).toMatch(/outbox/)
  })

  it('online: confirms naming the flag and environments, then delivers a delete per environment based on the revision seen', async () => {
    const { outbox, writes } = recordingOutbox({ kind: 'applied' })
    const deleted = mount({ role: 'editor', outbox })
    fireEvent.click(screen.getByRole('button', { name: 'Delete flag' }))
    await settle()
    expect(screen.getByRole('heading', { name: 'Delete checkout?' })).toBeTruthy()
    expect(screen.getByText(/checkout is deleted from Development:/)).toBeTruthy()
    fireEvent.change(screen.getByLabelText('Delete from'), { target: { value: 'all' } })
    expect(screen.getByText(/checkout is deleted from Development, Staging:/)).toBeTruthy()
    expect(screen.getByText(/Production keeps it: Production requires approval/)).toBeTruthy()
    const dialog = screen.getByRole('dialog')
    fireEvent.click(
      [...dialog.querySelectorAll('button')].find((b) => b.textContent === 'Delete flag') as HTMLButtonElement,
    )
    await settle()
    expect(writes).toEqual([
      ['dev', 'checkout', 7, true],
      ['staging', 'checkout', 8, true],
    ])
    expect(deleted).toEqual([['dev', 'staging']])
    expect(screen.queryByRole('dialog')).toBeNull()
  })

  it("online: the service's conflict (changed since) stays in the open dialog and nothing is reported deleted", async () => {
    const { outbox } = recordingOutbox({ kind: 'conflict', reason: 'someone changed it at revision 8' })
    const deleted = mount({ outbox })
    fireEvent.click(screen.getByRole('button', { name: 'Delete flag' }))
    await settle()
    const dialog = screen.getByRole('dialog')
    fireEvent.click(
      [...dialog.querySelectorAll('button')].find((b) => b.textContent === 'Delete flag') as HTMLButtonElement,
    )
    await settle()
    expect(screen.getByRole('alert').textContent).toMatch(/^checkout changed since you opened it: someone changed it/)
    expect(screen.getByRole('dialog')).toBeTruthy()
    expect(deleted).toEqual([])
  })

  it('offline: queues a delete per environment with the revision seen as its base; an admin includes approval environments', async () => {
    const { outbox, writes } = recordingOutbox({ kind: 'applied' })
    const deleted = mount({ role: 'admin', offline: true, outbox })
    fireEvent.click(screen.getByRole('button', { name: 'Delete flag' }))
    await settle()
    expect(screen.getByText(/Offline: the delete is queued/)).toBeTruthy()
    fireEvent.change(screen.getByLabelText('Delete from'), { target: { value: 'all' } })
    expect(screen.getByText(/Production requires approval, but a change request cannot delete/)).toBeTruthy()
    fireEvent.click(screen.getByRole('button', { name: 'Queue delete' }))
    await settle()
    expect(writes).toEqual([
      ['dev', 'checkout', 7, false],
      ['staging', 'checkout', 8, false],
      ['prod', 'checkout', 9, false],
    ])
    expect(deleted).toEqual([['dev', 'staging', 'prod']])
  })
})
