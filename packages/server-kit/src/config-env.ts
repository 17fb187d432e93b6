import { byteLimit } from './byte-size.js'

/** A setting that cannot be used; the CLIs print its message (which names the variable) and exit 1. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError'
}

export type Env = Record<string, string | undefined>

/** An integer environment variable within bounds, or the fallback when unset or empty. */
export function envInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!/^\d+$/.test(raw.trim()) || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max} (got ${JSON.stringify(raw)})`)
  }
  return value
}

/**
 * A size environment variable (`100kb`, `1mb`, `1.5 MB`, or bytes; units of 1024) within bounds, returned as
 * written, or the fallback when unset or empty. 0 or a typo would otherwise refuse every body with a 413.
 */
export function envByteSize(env: Env, name: string, fallback: string, min = 1024, max = 2 ** 30): string {
  const raw = env[name]
  if (raw === undefined || raw.trim() === '') return fallback
  let bytes: number
  try {
    bytes = byteLimit(raw)
  } catch {
    bytes = Number.NaN
  }
  if (!(bytes >= min && bytes <= max)) {
    throw new ConfigError(
      `${name} must be a size such as 100kb or 1mb, from ${formatSize(min)} to ${formatSize(max)} (got ${JSON.stringify(raw)})`,
    )
  }
  return raw.trim()
}

function formatSize(bytes: number): string {
  for (const [unit, size] of [
    ['gb', 2 ** 30],
    ['mb', 2 ** 20],
    ['kb', 2 ** 10],
  ] as const) {
    if (bytes % size === 0) return `${bytes / size}${unit}`
  }
  return `${bytes}b`
}
