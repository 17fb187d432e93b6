/** The flag service's limits: 5 failures within 10 minutes lock the account for 15 minutes. */
export interface LockoutPolicy {
  maxFailures: number
  windowMs: number
  lockMs: number
}

export const LOCKOUT_POLICY: LockoutPolicy = {
  maxFailures: 5,
  windowMs: 10 * 60_000,
  lockMs: 15 * 60_000,
}

export type LockoutState =
  | { locked: false; attemptsRemaining: number }
  | { locked: true; retryAfterSeconds: number; lockedUntil: number }

/**
 * The lock state of one account at `now`, from the times of its failed logins.
 * Pure, so the timing is tested with plain numbers.
 *
 * Failures are replayed oldest first: whenever `maxFailures` of them fall
 * within `windowMs`, the account locks for `lockMs` from the failure that
 * completed the set, and the count starts again (failures are not recorded
 * while locked, and the ones that caused a lock never count twice).
 * `attemptsRemaining` is how many more failures the account can take before
 * the next one locks it.
 */
export function lockoutState(failures: readonly number[], now: number, policy = LOCKOUT_POLICY): LockoutState {
  const sorted = [...failures].filter((t) => t <= now).sort((a, b) => a - b)
  let window: number[] = []
  let lockedUntil = Number.NEGATIVE_INFINITY
  for (const at of sorted) {
    if (at < lockedUntil) continue
    window = window.filter((t) => t > at - policy.windowMs)
    window.push(at)
    if (window.length >= policy.maxFailures) {
      lockedUntil = at + policy.lockMs
      window = []
    }
  }
  if (now < lockedUntil) {
    return { locked: true, lockedUntil, retryAfterSeconds: Math.ceil((lockedUntil - now) / 1000) }
  }
  const recent = window.filter((t) => t > now - policy.windowMs).length
  return { locked: false, attemptsRemaining: policy.maxFailures - recent }
}

/** How far back failures matter: a lock can start only from failures within one window before it. */
export function lockoutHorizonMs(policy = LOCKOUT_POLICY): number {
  return policy.windowMs + policy.lockMs
}
