import { browserOnlineSource } from '@flagsync/flag-client'
import { type RetryPolicy, resolveRetryPolicy } from '@flagsync/protocol'
import { systemClock } from './clock.js'
import { defaultBroadcastChannel } from './cross-tab.js'
import { DEFAULT_DURABILITY, type Durability } from './durability.js'
import { mustBe, SyncClientError } from './errors.js'
import { isId } from './normalize-operation.js'
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
  durability: Durability
}

const invalidConfig = (what: string, rule: string, got?: string): SyncClientError =>
  mustBe('invalid_config', what, rule, got)

type NumberOption = 'batchSize' | 'syncIntervalMs' | 'requestTimeoutMs' | 'leaseMs' | 'pushDelayMs'

/** A number option: its default when not given, else positive (or, with `orZero`, >= 0), an integer if `integer`. */
function numberOption(options: SyncClientOptions, name: NumberOption, integer = false, orZero = false): number {
  const value: unknown = options[name]
  if (value === undefined) return DEFAULTS[name]
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < 0 ||
    (value === 0 && !orZero) ||
    (integer && !Number.isInteger(value))
  ) {
    throw invalidConfig(
      name,
      `a ${integer ? 'positive integer' : orZero ? 'number >= 0' : 'positive number'}`,
      String(value),
    )
  }
  return value
}

function checkHeaders(value: unknown, where: string): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidConfig(where, 'an object of header names to string values')
  }
  for (const [name, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw invalidConfig(`${where}: header ${JSON.stringify(name)}`, 'a string')
  }
  return { ...(value as Record<string, string>) }
}

function webhookUrl(value: unknown): string {
  try {
    const url = new URL(value as string)
    if (typeof value === 'string' && /^https?:$/.test(url.protocol)) return url.href
  } catch {
    // not a URL at all: the same answer as a relative or non-http one
  }
  throw invalidConfig('webhookUrl', 'an absolute http(s) URL', JSON.stringify(value))
}

function globalLocks(): LockManagerLike | null {
  const locks = (globalThis as { navigator?: { locks?: LockManagerLike } }).navigator?.locks
  return locks && typeof locks.request === 'function' ? locks : null
}

export function resolveOptions(options: SyncClientOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw invalidConfig('options', 'an object ({ webhookUrl })')
  const g = globalThis as { indexedDB?: IDBFactory; IDBKeyRange?: typeof IDBKeyRange; fetch?: typeof fetch }
  const indexedDB = options.indexedDB ?? g.indexedDB
  const keyRange = options.IDBKeyRange ?? g.IDBKeyRange
  if (!indexedDB || !keyRange) {
    throw invalidConfig('options.indexedDB and options.IDBKeyRange', 'given where there is no IndexedDB (Node)')
  }
  const userFetch = options.fetch
  if (userFetch !== undefined ? typeof userFetch !== 'function' : typeof g.fetch !== 'function') {
    throw invalidConfig('options.fetch', 'a function (there is no global fetch)')
  }
  // Called as a plain function: a browser's fetch throws "Illegal invocation" when called as a method of another object.
  const fetchImpl: typeof fetch = (input, init) => (userFetch ?? (g.fetch as typeof fetch))(input, init)

  const retry = resolveRetryPolicy(options.retry)
  if (typeof retry === 'string') throw new SyncClientError('invalid_config', retry)

  const dbName = options.dbName ?? DEFAULTS.dbName
  if (typeof dbName !== 'string' || dbName === '') throw invalidConfig('dbName', 'a non-empty string')

  const rawHeaders = options.headers ?? {}
  const fixed = typeof rawHeaders === 'function' ? null : checkHeaders(rawHeaders, 'headers')
  const actor = options.actor
  if (actor !== undefined && !isId(actor, 256)) throw invalidConfig('actor', 'a string of 1 to 256 characters')
  // Percent-encoded: header values are Latin-1 on the wire, names are not.
  const stamp: Record<string, string> = actor === undefined ? {} : { 'X-Flagsync-Actor': encodeURIComponent(actor) }
  const headers = async () => ({
    ...(fixed ?? checkHeaders(await (rawHeaders as () => unknown)(), 'headers()')),
    ...stamp,
  })

  return {
    webhookUrl: webhookUrl(options.webhookUrl),
    headers,
    batchSize: numberOption(options, 'batchSize', true),
    syncIntervalMs: numberOption(options, 'syncIntervalMs'),
    dbName,
    retry,
    requestTimeoutMs: numberOption(options, 'requestTimeoutMs'),
    deadLetter: options.deadLetter === true,
    leaseMs: numberOption(options, 'leaseMs'),
    pushDelayMs: options.pushDelayMs === null ? null : numberOption(options, 'pushDelayMs', false, true),
    indexedDB,
    IDBKeyRange: keyRange,
    fetch: fetchImpl,
    online: options.online ?? browserOnlineSource(),
    clock: options.clock ?? systemClock,
    random: options.random ?? Math.random,
    locks: options.locks === undefined ? globalLocks() : options.locks,
    broadcastChannel: options.broadcastChannel === undefined ? defaultBroadcastChannel() : options.broadcastChannel,
    generateId: options.generateId ?? randomId,
    durability: durabilityOption(options.durability),
  }
}

function durabilityOption(value: unknown): Durability {
  if (value === undefined) return DEFAULT_DURABILITY
  if (!(['relaxed', 'strict', 'default'] satisfies Durability[] as unknown[]).includes(value))
    throw invalidConfig('durability', "'relaxed', 'strict' or 'default'", String(value))
  return value as Durability
}
