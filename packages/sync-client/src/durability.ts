import { SyncClientError } from './errors.js'

/**
 * How hard IndexedDB works before it reports a write committed (the
 * `durability` of an `IDBTransaction`): `'relaxed'` once the operating system
 * has the data, `'strict'` once it is flushed to disk, `'default'` whatever the
 * browser picks. Browsers without the hint ignore it.
 */
export type Durability = 'relaxed' | 'strict' | 'default'

/** Measured in Chromium (bench `browser.enqueue.*`): relaxed commits faster and survives a tab or browser crash. */
export const DEFAULT_DURABILITY: Durability = 'relaxed'

const MODES: ReadonlySet<unknown> = new Set<Durability>(['relaxed', 'strict', 'default'])

export function resolveDurability(value: unknown): Durability {
  if (value === undefined) return DEFAULT_DURABILITY
  if (!MODES.has(value)) {
    throw new SyncClientError(
      'invalid_config',
      `durability must be 'relaxed', 'strict' or 'default', got ${String(value)}`,
    )
  }
  return value as Durability
}

/** The options argument of `IDBDatabase.transaction` for read-write work. */
export function transactionOptions(durability: Durability): IDBTransactionOptions | undefined {
  return durability === 'default' ? undefined : { durability }
}
