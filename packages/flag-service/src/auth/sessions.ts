import type { Request } from 'express'
import type { ServiceRuntime } from '../service-runtime.js'
import { SERVICE_TABLES } from '../tables.js'
import type { AuthUser, Role } from './context.js'
import { recordRevocation } from './revocations.js'
import { generateSecret, hashSecret } from './secrets.js'

const SESSION_COOKIE = 'flagsync_session'
/** The flag service's limits: a session lasts 7 days from login (absolute, not sliding). */
const SESSION_TTL_MS = 7 * 24 * 60 * 60 * 1000

/** Starts a session and returns the cookie value; only its SHA-256 is stored. */
export async function createSession(runtime: ServiceRuntime, userId: number): Promise<string> {
  const value = generateSecret('')
  const now = runtime.clock()
  await runtime.knex(SERVICE_TABLES.sessions).where('expires_at', '<=', now).delete()
  await runtime.knex(SERVICE_TABLES.sessions).insert({
    id_hash: hashSecret(value),
    user_id: userId,
    created_at: now,
    expires_at: now + SESSION_TTL_MS,
  })
  return value
}

/** The user of a live session, or undefined (unknown, expired, or its user deleted). */
export async function sessionUser(runtime: ServiceRuntime, value: string): Promise<AuthUser | undefined> {
  const row = (await runtime
    .knex({ s: SERVICE_TABLES.sessions })
    .join({ u: SERVICE_TABLES.users }, 'u.id', 's.user_id')
    .where('s.id_hash', hashSecret(value))
    .andWhere('s.expires_at', '>', runtime.clock())
    .first('u.id', 'u.email', 'u.name', 'u.role')) as
    | { id: number | string; email: string; name: string; role: Role }
    | undefined
  return row ? { id: Number(row.id), email: row.email, name: row.name, role: row.role } : undefined
}

/** Signs a session out; its open streams end now (see `recordRevocation`). */
export async function deleteSession(runtime: ServiceRuntime, value: string): Promise<void> {
  await runtime.write(async (trx, flags) => {
    const deleted = await trx(SERVICE_TABLES.sessions).where('id_hash', hashSecret(value)).delete()
    if (deleted > 0) recordRevocation(flags, 'session', runtime.clock())
  })
}

/** The session cookie's value from a request, if any. */
export function sessionCookieValue(req: Request): string | undefined {
  const header = req.headers.cookie
  if (!header) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0 || part.slice(0, eq).trim() !== SESSION_COOKIE) continue
    const value = part.slice(eq + 1).trim()
    return /^[A-Za-z0-9_-]{1,128}$/.test(value) ? value : undefined
  }
  return undefined
}

function attributes(maxAgeSeconds: number, secure: boolean): string {
  return `Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`
}

/** HttpOnly, SameSite=Strict, 7 days, whole site; Secure when configured (or, on auto, over HTTPS). */
export function sessionCookie(value: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${value}; ${attributes(SESSION_TTL_MS / 1000, secure)}`
}

export function clearedSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; ${attributes(0, secure)}`
}
