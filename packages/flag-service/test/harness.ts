import {
  type FlagServiceServer,
  loadServiceConfig,
  type ServiceConfig,
  startFlagServiceServer,
} from '@flagsync/flag-service'
import { silentLogger } from '@flagsync/server-kit'
import { TABLES } from '@flagsync/store'
import { createTestDatabase, type Dialect, type TestDatabase } from '@flagsync/test-support/databases'
import type { Json } from '@flagsync/test-support/http'
import { IMPRESSION_TABLES } from '../src/impressions/index.js'
import { SERVICE_TABLES } from '../src/tables.js'

export const ADMIN_EMAIL = 'admin@example.com'
export const ADMIN_PASSWORD = 'correct horse battery'
export const WORKSPACE_NAME = 'Acme'
/** 2026-01-01T00:00:00Z: the injected clock starts here. */
export const T0 = Date.UTC(2026, 0, 1)
export const MINUTE = 60_000
export const DAY = 24 * 60 * MINUTE

/** How a request authenticates: a session cookie (with or without the CSRF header), a Bearer secret, or nothing. */
export type Caller =
  | { kind: 'session'; cookie: string; csrf?: boolean }
  | { kind: 'bearer'; secret: string }
  | { kind: 'anonymous' }

export type { Json } from '@flagsync/test-support/http'

export const anonymous: Caller = { kind: 'anonymous' }
export const bearer = (secret: string): Caller => ({ kind: 'bearer', secret })

interface RequestInit {
  method?: string
  /** Sent as JSON unless it is a string (sent raw). */
  body?: unknown
  headers?: Record<string, string>
  as?: Caller
}

export interface Harness {
  server: FlagServiceServer
  url: string
  dialect: Dialect
  databaseUrl: string
  /** The injected clock: read `now`, move it with `advance`. */
  clock: { now: number; advance(ms: number): void }
  /** Session of the workspace admin created at setup. */
  admin: Caller
  adminId: number
  /** The "Default" project setup created, and its Production SDK key in clear (from the setup result). */
  defaultProjectId: string
  defaultSdkKey: string
  request(path: string, init?: RequestInit): Promise<Response>
  /** request + JSON body, asserting nothing about the status. */
  call(path: string, init?: RequestInit): Promise<{ status: number; body: Json; res: Response }>
  /** Logs in and returns a session caller (CSRF header on). */
  login(email: string, password: string): Promise<Caller>
  /** Creates a user (as the admin) and returns its id. */
  createUser(input: {
    email: string
    role: 'admin' | 'editor' | 'viewer'
    name?: string
    password?: string
  }): Promise<number>
  /** Creates a personal access token for `as` and returns its full value. */
  createToken(as: Caller, scope: 'read_only' | 'read_write', expiresInDays?: number): Promise<string>
  /** Every row of every service and flag-store table (to prove a refused request changed nothing). */
  dump(): Promise<Record<string, unknown[]>>
  stop(): Promise<void>
  dispose(): Promise<void>
}

export function headersFor(caller: Caller | undefined): Record<string, string> {
  if (!caller || caller.kind === 'anonymous') return {}
  if (caller.kind === 'bearer') return { Authorization: `Bearer ${caller.secret}` }
  return { Cookie: caller.cookie, ...(caller.csrf === false ? {} : { 'X-Service-Request': 'true' }) }
}

/** The `name=value` part of a Set-Cookie header. */
export function cookieOf(res: Response): string {
  const header = res.headers.get('set-cookie') ?? ''
  return header.split(';')[0] ?? ''
}

/**
 * A real flag service on 127.0.0.1:0 with a fresh database of the dialect,
 * set up with the admin, and an injected clock.
 */
export async function startHarness(
  dialect: Dialect,
  options: {
    env?: Record<string, string>
    setup?: boolean
    databaseUrl?: string
    clockStart?: number
    /** SQLite's wait for another connection's write lock (default 5 000 ms). */
    busyTimeoutMs?: number
  } = {},
): Promise<Harness> {
  const db: TestDatabase | undefined = options.databaseUrl ? undefined : await createTestDatabase(dialect)
  const databaseUrl = options.databaseUrl ?? (db as TestDatabase).url
  const setupEnv =
    options.setup === false ? {} : { ADMIN_EMAIL, ADMIN_PASSWORD, WORKSPACE_NAME, ADMIN_NAME: 'Ada Admin' }
  const config: ServiceConfig = loadServiceConfig({ PORT: '0', DATABASE_URL: databaseUrl, ...setupEnv, ...options.env })
  const clock = {
    now: options.clockStart ?? T0,
    advance(ms: number) {
      clock.now += ms
    },
  }
  const server = await startFlagServiceServer(config, silentLogger(), {
    clock: () => clock.now,
    busyTimeoutMs: options.busyTimeoutMs,
  })
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    await server.close()
  }

  const request = (path: string, init: RequestInit = {}) => {
    const headers: Record<string, string> = { ...headersFor(init.as), ...(init.headers ?? {}) }
    let body: string | undefined
    if (init.body !== undefined) {
      body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body)
      headers['Content-Type'] ??= 'application/json'
    }
    return fetch(`${server.url}${path}`, { method: init.method ?? 'GET', headers, body, redirect: 'manual' })
  }
  const call = async (path: string, init: RequestInit = {}) => {
    const res = await request(path, init)
    const text = await res.text()
    let body: Json = text
    try {
      body = text === '' ? undefined : JSON.parse(text)
    } catch {
      // plain text (e.g. /health)
    }
    return { status: res.status, body, res }
  }
  const login = async (email: string, password: string): Promise<Caller> => {
    const res = await request('/api/auth/login', { method: 'POST', body: { email, password } })
    if (res.status !== 200) throw new Error(`login of ${email} failed: ${res.status} ${await res.text()}`)
    return { kind: 'session', cookie: cookieOf(res) }
  }

  const harness: Harness = {
    server,
    url: server.url,
    dialect,
    databaseUrl,
    clock,
    admin: anonymous,
    adminId: 0,
    defaultProjectId: server.setup.status === 'created' ? server.setup.projectId : '',
    defaultSdkKey: server.setup.status === 'created' ? server.setup.sdkKey : '',
    request,
    call,
    login,
    async createUser({ email, role, name, password }) {
      const { status, body } = await call('/api/users', {
        method: 'POST',
        as: harness.admin,
        body: { email, role, name: name ?? email.split('@')[0], password: password ?? 'password-123' },
      })
      if (status !== 200) throw new Error(`createUser ${email}: ${status} ${JSON.stringify(body)}`)
      return body.id as number
    },
    async createToken(as, scope, expiresInDays) {
      const { status, body } = await call('/api/tokens', {
        method: 'POST',
        as,
        body: {
          name: `${scope} token`,
          scope,
          ...(expiresInDays === undefined ? {} : { expires_in_days: expiresInDays }),
        },
      })
      if (status !== 200) throw new Error(`createToken: ${status} ${JSON.stringify(body)}`)
      return body.token as string
    },
    async dump() {
      const out: Record<string, unknown[]> = {}
      const knex = server.runtime.knex
      for (const table of [
        ...Object.values(SERVICE_TABLES),
        ...Object.values(IMPRESSION_TABLES),
        TABLES.flags,
        TABLES.changes,
        TABLES.meta,
      ]) {
        out[table] = await knex(table).select('*').orderByRaw('1')
      }
      return out
    },
    stop,
    async dispose() {
      await stop()
      await db?.drop()
    },
  }
  if (options.setup !== false && server.setup.status !== 'missing') {
    harness.admin = await login(ADMIN_EMAIL, ADMIN_PASSWORD)
    const me = await call('/api/auth/me', { as: harness.admin })
    harness.adminId = me.body.id
  }
  return harness
}

/** Puts flags into an environment's scope straight through the flag store, without the flag routes. */
export async function seedFlags(h: Harness, environmentId: string, keys: string[]): Promise<void> {
  await h.server.runtime.write(async (_trx, flags) => {
    for (const key of keys) flags.put({ key, is_enabled: true }, environmentId)
  })
}
