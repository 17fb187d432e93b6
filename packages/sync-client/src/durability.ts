/**
 * How hard IndexedDB works before it reports a write committed (the
 * `durability` of an `IDBTransaction`): `'relaxed'` once the operating system
 * has the data, `'strict'` once it is flushed to disk, `'default'` whatever the
 * browser picks. Browsers without the hint ignore it.
 */
export type Durability = 'relaxed' | 'strict' | 'default'

/** Measured in Chromium (bench `browser.enqueue.*`): relaxed commits faster and survives a tab or browser crash. */
export const DEFAULT_DURABILITY: Durability = 'relaxed'

/** The options argument of `IDBDatabase.transaction` for read-write work. */
export function transactionOptions(durability: Durability): IDBTransactionOptions | undefined {
  return durability === 'default' ? undefined : { durability }
}
