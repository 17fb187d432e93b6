import type { Clock } from './types.js'

/**
 * The real clock. Each call reads the global at call time (not at import), so
 * fake timers installed later still apply.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof setTimeout>),
}
