import { browserOnlineSource } from '@flagsync/flag-client'
import { type RetryPolicy, resolveRetryPolicy } from '@flagsync/protocol'
import { systemClock } from './clock.js'
import { defaultBroadcastChannel } from './cross-tab.js'
import { SyncClientError } from './errors.js'
import { randomId } from './random-id.js'
import type { BroadcastChannelFactory, Clock, LockManagerLike, OnlineSource, SyncClientOptions } from './types.js'

/** The option values `createSyncClient` uses when they are not given (milliseconds where a time). */
export const DEFAULTS = Object.freeze({
  batchSize: 50,
  syncIntervalMs: 5000,
  dbName: 'flagsync',
  requestTimeoutMs: 30_000,
  leaseMs: 5000,
  pushDelayMs: 25,
})

/** Every option filled in and checked. */
export interface ResolvedOptions {
  webhookUrl: string
  headers: () => Promise<Record<string, string>>
  batchSize: number
  syncIntervalMs: number
  dbName: string
  retry: RetryPolicy
  requestTimeoutMs: number
  deadLetter: boolean
  leaseMs: number
  /** null: writes wait for the interval or flush(). */
  pushDelayMs: number | null
  indexedDB: IDBFactory
  IDBKeyRange: typeof IDBKeyRange
  fetch: typeof fetch
  online: OnlineSource
  clock: Clock
  random: () => number
  locks: LockManagerLike | null
  broadcastChannel: BroadcastChannelFactory | null
  generateId: () => string
}

function configError(message: string): SyncClientError {
  return new SyncClientError('invalid_config', message)
}

function positive(name: string, value: unknown, fallback: number, integer: boolean): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw configError(`${name} must be a ${integer ? 'positive integer' : 'positive number'}, got ${String(value)}`)
  }
  return value
}

function checkHeaders(value: unknown, where: string): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw configError(`${where} must be an object of header names to string values`)
  }
  for (const [name, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw configError(`${where}: header ${JSON.stringify(name)} must be a string`)
  }
  return { ...(value as Record<string, string>) }
}

function webhookUrl(value: unknown): string {
  if (typeof value !== 'string' || value === '') throw configError('webhookUrl is required (an absolute http(s) URL)')
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw configError(`webhookUrl must be an absolute URL, got ${JSON.stringify(value)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw configError(`webhookUrl must use http or https, got ${JSON.stringify(url.protocol)}`)
  }
  return url.href
}

function globalLocks(): LockManagerLike | null {
  const locks = (globalThis as { navigator?: { locks?: LockManagerLike } }).navigator?.locks
  return locks && typeof locks.request === 'function' ? locks : null
}

export function resolveOptions(options: SyncClientOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw configError('options are required ({ webhookUrl })')
  const g = globalThis as { indexedDB?: IDBFactory; IDBKeyRange?: typeof IDBKeyRange; fetch?: typeof fetch }
  const indexedDB = options.indexedDB ?? g.indexedDB
  const keyRange = options.IDBKeyRange ?? g.IDBKeyRange
  if (!indexedDB || !keyRange) {
    throw configError(
      'IndexedDB is not available: pass options.indexedDB and options.IDBKeyRange (e.g. fake-indexeddb in Node)',
    )
  }
  const userFetch = options.fetch
  if (userFetch !== undefined && typeof userFetch !== 'function') throw configError('fetch must be a function')
  if (!userFetch && typeof g.fetch !== 'function') throw configError('fetch is not available: pass options.fetch')
  // Called as a plain function: a browser's fetch throws "Illegal invocation" when called as a method of another object.
  const fetchImpl: typeof fetch = userFetch
    ? (input, init) => userFetch(input, init)
    : (input, init) => globalThis.fetch(input, init)

  const retry = resolveRetryPolicy(options.retry)
  if (typeof retry === 'string') throw configError(retry)

  const dbName = options.dbName ?? DEFAULTS.dbName
  if (typeof dbName !== 'string' || dbName === '') throw configError('dbName must be a non-empty string')

  let headers: () => Promise<Record<string, string>>
  const rawHeaders = options.headers ?? {}
  if (typeof rawHeaders === 'function') {
    headers = async () => checkHeaders(await rawHeaders(), 'headers()')
  } else {
    const fixed = checkHeaders(rawHeaders, 'headers')
    headers = async () => fixed
  }

  const actor = options.actor
  if (actor !== undefined) {
    if (typeof actor !== 'string' || actor.length === 0 || actor.length > 256) {
      throw configError('actor must be a string of 1 to 256 characters')
    }
    const plain = headers
    // Percent-encoded: header values are Latin-1 on the wire, names are not.
    const stamp = encodeURIComponent(actor)
    headers = async () => ({ ...(await plain()), 'X-Flagsync-Actor': stamp })
  }

  return {
    webhookUrl: webhookUrl(options.webhookUrl),
    headers,
    batchSize: positive('batchSize', options.batchSize, DEFAULTS.batchSize, true),
    syncIntervalMs: positive('syncIntervalMs', options.syncIntervalMs, DEFAULTS.syncIntervalMs, false),
    dbName,
    retry,
    requestTimeoutMs: positive('requestTimeoutMs', options.requestTimeoutMs, DEFAULTS.requestTimeoutMs, false),
    deadLetter: options.deadLetter === true,
    leaseMs: positive('leaseMs', options.leaseMs, DEFAULTS.leaseMs, false),
    pushDelayMs:
      options.pushDelayMs === null ? null : nonNegative('pushDelayMs', options.pushDelayMs, DEFAULTS.pushDelayMs),
    indexedDB,
    IDBKeyRange: keyRange,
    fetch: fetchImpl,
    online: options.online ?? browserOnlineSource(),
    clock: options.clock ?? systemClock,
    random: options.random ?? Math.random,
    locks: options.locks === undefined ? globalLocks() : options.locks,
    broadcastChannel: options.broadcastChannel === undefined ? defaultBroadcastChannel() : options.broadcastChannel,
    generateId: options.generateId ?? randomId,
  }
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw configError(`${name} must be a finite number >= 0 (or null)`)
  }
  return value
}
