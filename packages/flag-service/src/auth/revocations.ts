import type { FlagWriter } from '@flagsync/store'

/**
 * The change-log scope of access revocations (not an environment id, not a
 * segment scope, so no stream serves it as flags).
 */
export const ACCESS_SCOPE = 'access'

/**
 * Records, in the transaction that ends an access (a token, an SDK key, a
 * session, a user, a membership), that open streams must be checked again.
 * It rides the change log, so every instance hears it the way it hears flag
 * changes: this process at once, others on PostgreSQL at once (LISTEN) and
 * on SQLite within the poll interval. One row is upserted, whatever the count.
 */
export function recordRevocation(flags: FlagWriter, what: string, now: number): void {
  flags.put({ key: 'revoked', what, at: now }, ACCESS_SCOPE)
}
