// @vitest-environment happy-dom

import type { DeliveryError, SyncClient } from '@flagsync/sync-client'
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import { LastAttempt } from '../src/offline-edits.js'

afterEach(cleanup)

const refusal = (over: Partial<DeliveryError>): DeliveryError => ({
  kind: 'rejected',
  status: 422,
  code: 'validation_failed',
  message: 'operation 0 (update flags/banner): invalid changes',
  batchId: 'b1',
  at: 0,
  ...over,
})

/** `outbox-delivery.test.ts` checks against the real service that these ids drop exactly the refused edit. */
describe("the pending panel's last attempt", () => {
  it('offers to discard a refused edit, by the outbox ids the sync client names for it', async () => {
    const discarded: number[][] = []
    const sync = { discard: async (ids: readonly number[]) => discarded.push([...ids]) } as unknown as SyncClient
    render(<LastAttempt error={refusal({ outboxIds: [3, 4] })} sync={sync} onError={() => {}} />)
    expect(screen.getByText(/Last attempt: operation 0 \(update flags\/banner\): invalid changes/)).toBeTruthy()
    await act(async () => {
      fireEvent.click(screen.getByRole('button', { name: 'Discard the refused edit' }))
    })
    expect(discarded).toEqual([[3, 4]])
  })

  it('offers nothing to discard for a failure that names no operation (network, 5xx, credentials)', () => {
    const sync = {} as SyncClient
    render(<LastAttempt error={refusal({ kind: 'transient', status: 503 })} sync={sync} onError={() => {}} />)
    render(<LastAttempt error={refusal({ status: 401 })} sync={sync} onError={() => {}} />)
    expect(screen.queryByRole('button')).toBeNull()
  })
})
