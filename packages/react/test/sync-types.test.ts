import type * as Sync from '@flagsync/sync-client'
import { describe, expectTypeOf, it } from 'vitest'
import type { Conflict, DeliveryError, OutboxEntry, SyncClientLike, SyncState, SyncStatus } from '../src/index.js'

// The bindings declare the sync client's types themselves (the sync client is an optional peer); checked by
// `tsc -p tsconfig.test.json`, these hold them to the sync client's own.
describe('the sync client types the hooks return', () => {
  it('are the sync client’s types', () => {
    expectTypeOf<SyncState>().toEqualTypeOf<Sync.SyncState>()
    expectTypeOf<DeliveryError>().toEqualTypeOf<Sync.DeliveryError>()
    expectTypeOf<SyncStatus>().toEqualTypeOf<Sync.SyncStatus>()
    expectTypeOf<OutboxEntry>().toEqualTypeOf<Sync.OutboxEntry>()
    expectTypeOf<Conflict>().toEqualTypeOf<Sync.Conflict>()
  })

  it('take what createSyncClient returns as the provider’s syncClient', () => {
    expectTypeOf<Sync.SyncClient>().toExtend<SyncClientLike>()
  })
})
