import {
  createFlagClient,
  createSyncClient,
  type FlagClient,
  type FlagClientOptions,
  type ManualOnlineSource,
  manualOnlineSource,
  type SyncClient,
} from '@flagsync/sync-client'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'

export interface Setup {
  server: TestServer
  flags: FlagClient
  sync: SyncClient
  online: ManualOnlineSource
  indexedDB: IDBFactory
  /** Another flag client on the same server, outbox and IndexedDB. */
  newFlagClient(extra?: Partial<FlagClientOptions>): FlagClient
  /** Creates or replaces a flag on the server (the flat API's POST /api/flags). */
  put(flag: Record<string, unknown>): Promise<void>
  /** The flag as the server has it. */
  serverFlag(key: string): Promise<Record<string, unknown>>
}

const closers: Array<() => Promise<void>> = []

export async function closeAll(): Promise<void> {
  for (const close of closers.splice(0).reverse()) await close()
}

/** A real flat API server on a real SQLite file, with a sync client (offline at first) and a flag client over fake IndexedDB. */
export async function setUp(
  initial: Array<Record<string, unknown>>,
  options: { online?: boolean; flagOptions?: Partial<FlagClientOptions> } = {},
): Promise<Setup> {
  const server = await startTestServer()
  closers.push(() => server.dispose())
  const put = async (flag: Record<string, unknown>) => {
    const res = await server.request('/api/flags', { method: 'POST', body: flag })
    if (!res.ok) throw new Error(`POST /api/flags: ${res.status} ${await res.text()}`)
  }
  for (const flag of initial) await put(flag)
  const online = manualOnlineSource(options.online ?? true)
  const indexedDB = new IDBFactory()
  const sync = createSyncClient({
    webhookUrl: `${server.url}/sync`,
    indexedDB,
    IDBKeyRange,
    online,
    locks: null,
    broadcastChannel: null,
  })
  closers.push(() => sync.close())
  const newFlagClient = (extra: Partial<FlagClientOptions> = {}) => {
    const client = createFlagClient({
      streamUrl: `${server.url}/stream`,
      indexedDB,
      IDBKeyRange,
      syncClient: sync,
      reconnect: { baseMs: 50, maxMs: 200 },
      ...extra,
    })
    closers.push(() => client.close())
    return client
  }
  const flags = newFlagClient(options.flagOptions)
  return {
    server,
    flags,
    sync,
    online,
    indexedDB,
    newFlagClient,
    put,
    serverFlag: async (key) => (await server.request(`/api/flags/${key}`)).json(),
  }
}

export function track(closer: () => Promise<void>): void {
  closers.push(closer)
}
