import { createReceiverApp, type Receiver, type ReceiverAppOptions } from '@flagsync/receiver'
import { listen, type RunningServer, silentLogger } from '@flagsync/server-kit'
import {
  type Database,
  FlagStore,
  type FlagStoreOptions,
  type OpenDatabaseOptions,
  openDatabase,
} from '@flagsync/store'
import { createTestDatabase, type Dialect, type TestDatabase } from '@flagsync/test-support/databases'
import { type Reply, readReply } from '@flagsync/test-support/http'

export interface Harness {
  url: string
  databaseUrl: string
  db: Database
  store: FlagStore
  receiver: Receiver
  /** POSTs to /sync: objects are sent as JSON, strings as they are. */
  post(body: unknown, headers?: Record<string, string>): Promise<Reply>
  request(method: string, path: string, init?: { body?: string; headers?: Record<string, string> }): Promise<Reply>
  /** Closes the server and the database connection; the data stays until `close`. */
  stop(): Promise<void>
  close(): Promise<void>
}

export type HarnessOptions = Partial<ReceiverAppOptions> & {
  /** A fresh database of this dialect (default sqlite: a temp file); ignored when `databaseUrl` is given. */
  dialect?: Dialect
  /** An existing database (to restart on the same data); the harness does not drop it. */
  databaseUrl?: string
  dbOptions?: OpenDatabaseOptions
  storeOptions?: FlagStoreOptions
}

const open: Harness[] = []

/** The receiver in a real Express app on 127.0.0.1:0 over a real SQLite file or PostgreSQL database. */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const { databaseUrl: givenUrl, dialect = 'sqlite', dbOptions, storeOptions, ...receiverOptions } = options
  const owned: TestDatabase | undefined = givenUrl ? undefined : await createTestDatabase(dialect)
  const databaseUrl = givenUrl ?? (owned as TestDatabase).url
  const db = await openDatabase(databaseUrl, dbOptions)
  const store = new FlagStore(db, storeOptions)
  const { app, receiver } = createReceiverApp({ logger: silentLogger(), ...receiverOptions, store })
  const server: RunningServer = await listen(app)
  const request = async (
    method: string,
    path: string,
    init: { body?: string; headers?: Record<string, string> } = {},
  ): Promise<Reply> => {
    const res = await fetch(`${server.url}${path}`, { method, headers: init.headers, body: init.body })
    return readReply(res)
  }
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    await server.close()
    await db.close()
  }
  const harness: Harness = {
    url: server.url,
    databaseUrl,
    db,
    store,
    receiver,
    request,
    post: (body, headers = {}) =>
      request('POST', options.path ?? '/sync', {
        body: typeof body === 'string' ? body : JSON.stringify(body),
        headers: { 'Content-Type': 'application/json', ...headers },
      }),
    stop,
    async close() {
      await stop()
      await owned?.drop()
    },
  }
  open.push(harness)
  return harness
}

export async function closeAllHarnesses(): Promise<void> {
  for (const h of open.splice(0).reverse()) await h.close()
}

export { batch, fullFlag, insert, remove, update } from '@flagsync/test-support/operations'

/** Every flag in the store, by key. */
export async function flagsOf(store: FlagStore): Promise<Record<string, unknown>> {
  const { rows } = await store.loadAll('')
  return Object.fromEntries(rows.map((r) => [r.key, r.flag]))
}
