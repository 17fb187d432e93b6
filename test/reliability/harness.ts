import { connect } from 'node:net'
import type { FlatApiServerExtras, ServerConfig } from '@flagsync/flat-api'
import { streamUpdateSchema } from '@flagsync/protocol'
import type { Logger } from '@flagsync/server-kit'
import type { Dialect } from '@flagsync/test-support/databases'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import type { EventSourceMessage } from 'eventsource-parser'
import { afterEach } from 'vitest'

export type ReliabilityServer = TestServer

export interface StartOptions {
  dialect?: Dialect
  /** Reuse an existing database (a restart); it is not dropped by `dispose`. */
  databaseUrl?: string
  config?: Partial<ServerConfig>
  env?: Record<string, string>
  extras?: FlatApiServerExtras
  logger?: Logger
}

/** `startTestServer` with the runtime extras (fault injection, stream buffer size) and the logger under the test's control. */
export function startServer(options: StartOptions = {}): Promise<ReliabilityServer> {
  const { config, ...rest } = options
  return startTestServer({ ...config, ...rest })
}

/**
 * The servers and cleanups of a test file, undone after each test: the cleanups newest first, then the servers.
 * `start` is `startServer` with the server registered for disposal.
 */
export function serversPerTest(): {
  start: (options?: StartOptions) => Promise<ReliabilityServer>
  cleanups: Array<() => Promise<void> | void>
} {
  const servers: ReliabilityServer[] = []
  const cleanups: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
    for (const s of servers.splice(0)) await s.dispose()
  })
  return {
    cleanups,
    start: async (options = {}) => {
      const server = await startServer(options)
      servers.push(server)
      return server
    },
  }
}

/**
 * A `beforeCommit` hook that throws whatever error is switched on, so a test can make the database "fail"
 * at the last moment of a write transaction (after every statement of the batch ran) and then recover.
 */
export function faultSwitch() {
  let current: (() => Error) | undefined
  let hits = 0
  return {
    beforeCommit: () => {
      if (!current) return
      hits++
      throw current()
    },
    set(make: () => Error) {
      current = make
    },
    clear() {
      current = undefined
    },
    get hits() {
      return hits
    },
  }
}

export const dbError = (message: string, code: string) => () => Object.assign(new Error(message), { code })

export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
}

/**
 * Sends bytes exactly as given (no client-side normalisation: lying Content-Length, invalid UTF-8, raw
 * headers) and reads one response. Resolves with status 0 when the server closed without answering.
 */
export function rawRequest(url: string, bytes: Buffer | string, timeoutMs = 5000): Promise<RawResponse> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname)
    const chunks: Buffer[] = []
    let done = false
    const timer = setTimeout(() => {
      done = true
      socket.destroy()
      reject(new Error(`no complete response within ${timeoutMs} ms; got ${Buffer.concat(chunks).toString()}`))
    }, timeoutMs)
    const finish = () => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      const data = Buffer.concat(chunks)
      resolve(parseResponse(data)?.response ?? { status: 0, headers: {}, body: data.toString('utf8') })
    }
    socket.on('data', (chunk) => {
      chunks.push(chunk)
      const parsed = parseResponse(Buffer.concat(chunks))
      if (parsed?.complete) finish()
    })
    socket.on('error', finish)
    socket.on('close', finish)
    socket.write(bytes)
  })
}

function parseResponse(data: Buffer): { response: RawResponse; complete: boolean } | undefined {
  const end = data.indexOf('\r\n\r\n')
  if (end < 0) return undefined
  const [statusLine, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n')
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')
  if (!match) return undefined
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const i = line.indexOf(':')
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
  }
  const body = data.subarray(end + 4)
  const length = headers['content-length']
  const complete =
    length !== undefined
      ? body.length >= Number(length)
      : headers['transfer-encoding'] === undefined || body.toString('latin1').endsWith('0\r\n\r\n')
  return { response: { status: Number(match[1]), headers, body: body.toString('utf8') }, complete }
}

/**
 * Replays what a subscriber received, as a client would: `connected` must carry `true`, every `update` must
 * be valid JSON of the stream schema (so framing is intact). Returns the flags by key and the revision ids.
 */
export function replayStream(
  events: readonly EventSourceMessage[],
  initial: ReadonlyMap<string, unknown> = new Map(),
): { flags: Map<string, unknown>; revisions: number[] } {
  const flags = new Map(initial)
  const revisions: number[] = []
  for (const event of events) {
    if (event.event === 'connected') {
      if (event.data !== 'true') throw new Error(`connected data is ${JSON.stringify(event.data)}`)
      continue
    }
    if (event.event !== 'update') throw new Error(`unexpected event ${JSON.stringify(event.event)}`)
    const data: unknown = JSON.parse(event.data)
    const update = streamUpdateSchema.parse(data) // validates; the flag is kept as sent (no defaults added)
    if (event.id !== undefined) revisions.push(Number(event.id))
    if (update.type === 'UPSERT') flags.set(update.flag.key, (data as { flag: unknown }).flag)
    else flags.delete(update.key)
  }
  return { flags, revisions }
}

/** The flags of a replay in the list route's order (by key). */
export function byKey(flags: ReadonlyMap<string, unknown>): unknown[] {
  return [...flags.keys()].sort().map((k) => flags.get(k))
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
