/**
 * The dashboard's saved copies in localStorage (the signed-in user, projects,
 * environments, members, users): what the page shows offline, read-only.
 */

/** The value saved under `key`, or undefined when there is none or it is not JSON. */
export function readCached<T>(key: string): T | undefined {
  try {
    const raw = localStorage.getItem(key)
    return raw ? (JSON.parse(raw) as T) : undefined
  } catch {
    return undefined
  }
}

/** Saves `value` under `key` for the next offline visit. */
export function writeCached(key: string, value: unknown): void {
  localStorage.setItem(key, JSON.stringify(value))
}
