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
