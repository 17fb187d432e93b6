import type { Knex } from 'knex'
import type { ServiceRuntime } from '../service-runtime.js'
import { SERVICE_TABLES } from '../tables.js'
import { LOCKOUT_POLICY, type LockoutPolicy, lockoutHorizonMs, lockoutState } from './lockout.js'

const T = SERVICE_TABLES

/** First key of the two-key PostgreSQL advisory lock taken per email ('LOGI'); the second is `hashtext(email)`. */
const LOGIN_LOCK_CLASS = 0x4c4f4749

export type LoginAdmission =
  | { admitted: false; retryAfterSeconds: number }
  | {
      admitted: true
      /** The failure row that reserves this attempt: it stays if the password is wrong, and goes if it is right. */
      attemptId: number
      /** When it was admitted: the time its failure row holds. */
      at: number
      /** The account's failures (reserved attempts included) before this one, for the answer's count. */
      earlier: number[]
    }

/**
 * Admits one login attempt for `email`, or refuses it while the account is
 * locked. Admission and counting are one step per account in the database:
 * an admitted attempt is recorded as a failure *before* its password is
 * checked, so concurrent attempts (on this instance or any other on the same
 * database) each see every attempt admitted before them, and at most
 * `maxFailures` of a burst get a password check before the lock applies.
 *
 * PostgreSQL: a transaction-scoped advisory lock per email serializes the
 * read and the insert. SQLite: the transaction writes first, which takes the
 * database's write lock until it commits, with the same effect across
 * processes. Nothing slow (scrypt) runs while either lock is held.
 */
export async function admitLoginAttempt(
  runtime: ServiceRuntime,
  email: string,
  policy: LockoutPolicy = LOCKOUT_POLICY,
): Promise<LoginAdmission> {
  const now = runtime.clock()
  const postgres = runtime.db.config.dialect === 'postgres'
  return runtime.knex.transaction(async (trx) => {
    let attemptId: number | undefined
    if (postgres) {
      await trx.raw(`set local lock_timeout = '5s'`)
      await trx.raw('select pg_advisory_xact_lock(?, hashtext(?))', [LOGIN_LOCK_CLASS, email])
    } else {
      attemptId = await recordFailure(trx, email, now)
    }
    const earlier = (
      await trx(T.loginFailures)
        .where('email', email)
        .andWhere('failed_at', '>', now - lockoutHorizonMs(policy))
        .modify((q) => {
          if (attemptId !== undefined) q.whereNot('id', attemptId)
        })
        .pluck('failed_at')
    ).map(Number)
    const state = lockoutState(earlier, now, policy)
    if (state.locked) {
      // While locked nothing is recorded, so attempts do not extend the lock.
      if (attemptId !== undefined) await trx(T.loginFailures).where('id', attemptId).delete()
      return { admitted: false, retryAfterSeconds: state.retryAfterSeconds }
    }
    attemptId ??= await recordFailure(trx, email, now)
    return { admitted: true, attemptId, at: now, earlier }
  })
}

/**
 * A correct password: forgets the failures admitted up to and including this
 * attempt. Attempts admitted after it (ids are given in admission order, which
 * the per-account lock makes the same as id order) keep counting.
 */
export async function clearLoginFailures(runtime: ServiceRuntime, email: string, attemptId: number): Promise<void> {
  await runtime.knex(T.loginFailures).where('email', email).andWhere('id', '<=', attemptId).delete()
}

/**
 * An admin's password reset: the account's failures are forgotten, so its lockout ends with the guesses against the
 * old password, and the person signs in with the new one at once. Run it in the reset's transaction.
 */
export async function forgetLoginFailures(trx: Knex, email: string): Promise<void> {
  await trx(T.loginFailures).where('email', email).delete()
}

/** Failures past the horizon no longer matter for any account (sprayed unknown emails must not pile up). */
export async function pruneLoginFailures(runtime: ServiceRuntime, policy: LockoutPolicy = LOCKOUT_POLICY) {
  await runtime
    .knex(T.loginFailures)
    .where('failed_at', '<=', runtime.clock() - lockoutHorizonMs(policy))
    .delete()
}

async function recordFailure(trx: Knex.Transaction, email: string, now: number): Promise<number> {
  const [row] = (await trx(T.loginFailures).insert({ email, failed_at: now }).returning('id')) as Array<
    { id: number | string } | number
  >
  return Number(typeof row === 'object' ? row.id : row)
}
