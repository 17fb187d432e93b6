import { isAbsolute, resolve } from 'node:path'

export type DatabaseConfig = { dialect: 'sqlite'; filename: string } | { dialect: 'postgres'; connectionString: string }

export const DEFAULT_DATABASE_URL = 'sqlite:./data/flags.sqlite'

/**
 * `sqlite:./relative.sqlite` (relative to `cwd`), `sqlite:/absolute.sqlite`,
 * `sqlite::memory:`, or `postgres://` / `postgresql://` URLs.
 */
export function parseDatabaseUrl(url: string, cwd: string = process.cwd()): DatabaseConfig {
  if (/^postgres(ql)?:\/\//i.test(url)) return { dialect: 'postgres', connectionString: url }
  const match = /^sqlite:(?:\/\/)?(.+)$/i.exec(url)
  if (!match?.[1]) {
    throw new Error(
      `DATABASE_URL must start with sqlite: or postgres:// (got ${describeScheme(url)}); e.g. ${DEFAULT_DATABASE_URL}`,
    )
  }
  const path = match[1]
  if (path === ':memory:') return { dialect: 'sqlite', filename: path }
  return { dialect: 'sqlite', filename: isAbsolute(path) ? path : resolve(cwd, path) }
}

/** Error messages end up in logs, and URLs carry passwords: name only the scheme of a rejected URL. */
function describeScheme(url: string): string {
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(url)?.[0]
  return scheme ? `a ${JSON.stringify(scheme)} URL` : 'a value without a scheme'
}
