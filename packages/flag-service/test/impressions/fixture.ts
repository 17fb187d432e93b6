import type { Dialect } from '@flagsync/test-support/databases'
import { afterAll, beforeAll } from 'vitest'
import { ADMIN_EMAIL, ADMIN_PASSWORD, bearer, type Caller, type Harness, type Json, startHarness } from '../harness.js'

/** A harness plus the callers the impression routes care about. */
export interface ImpressionFixture {
  h: Harness
  /** Production of the Default project, and its SDK key (the one setup created). */
  envId: string
  key: Caller
  /** Staging of the same project and a key bound to it. */
  stagingId: string
  stagingKey: Caller
  /** A second project: its Production environment and key. */
  otherProjectEnvId: string
  otherProjectKey: Caller
  /** A workspace editor who is a project viewer of Default, and one who is in no project. */
  viewer: Caller
  outsider: Caller
  /** Posts a batch after creating the flags it names in that environment (ingest keeps impressions of its flags only). */
  post(items: unknown, as?: Caller, envId?: string): Promise<{ status: number; body: Json }>
  /** Posts a batch as it is: flag keys the environment does not have stay unknown. */
  postAsIs(items: unknown, as?: Caller, envId?: string): Promise<{ status: number; body: Json }>
  /** Creates a boolean flag (once per environment and key). */
  createFlag(key: string, envId?: string): Promise<void>
  list(query?: string, as?: Caller, envId?: string): Promise<{ status: number; body: Json }>
  stats(as?: Caller, envId?: string): Promise<{ status: number; body: Json }>
  dispose(): Promise<void>
}

export async function startImpressionFixture(
  dialect: Dialect,
  options: Parameters<typeof startHarness>[1] = {},
): Promise<ImpressionFixture> {
  // The built-in retention job (30 days) must not race the tests' jumps of the injected clock: they prune explicitly.
  const h = await startHarness(dialect, { ...options, env: { IMPRESSION_RETENTION_DAYS: '0', ...options.env } })
  try {
    const must = async (path: string, init: Parameters<Harness['call']>[1]) => {
      const res = await h.call(path, init)
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`)
      return res.body
    }
    const envs = (await must(`/api/projects/${h.defaultProjectId}/environments`, { as: h.admin })) as Array<{
      id: string
      slug: string
    }>
    const envId = envs.find((e) => e.slug === 'production')?.id ?? ''
    const stagingId = envs.find((e) => e.slug === 'staging')?.id ?? ''
    const staging = await must(`/api/projects/${h.defaultProjectId}/keys`, {
      method: 'POST',
      as: h.admin,
      body: { name: 'staging', environment_id: stagingId },
    })
    const other = await must('/api/projects', { method: 'POST', as: h.admin, body: { name: 'Other' } })

    const viewerId = await h.createUser({ email: 'viewer@example.com', role: 'editor' })
    await must(`/api/projects/${h.defaultProjectId}/members`, {
      method: 'POST',
      as: h.admin,
      body: { user_id: viewerId, role: 'viewer' },
    })
    await h.createUser({ email: 'outsider@example.com', role: 'editor' })
    const viewer = await h.login('viewer@example.com', 'password-123')
    const outsider = await h.login('outsider@example.com', 'password-123')
    const key = bearer(h.defaultSdkKey)
    const path = (env: string, rest = '') => `/api/environments/${env}/impressions${rest}`
    const call = async (...args: Parameters<Harness['call']>) => {
      const { status, body } = await h.call(...args)
      return { status, body }
    }
    const created = new Set<string>()
    /** Creates the flag unless done already; false when the environment refuses it (missing, say). */
    const tryCreateFlag = async (flagKey: string, env: string) => {
      if (created.has(`${env} ${flagKey}`)) return true
      const res = await h.call(`/api/environments/${env}/flags`, {
        method: 'POST',
        as: h.admin,
        body: { key: flagKey, is_enabled: true },
      })
      if (res.status === 200) created.add(`${env} ${flagKey}`)
      return res.status === 200
    }
    const createFlag = async (flagKey: string, env = envId) => {
      if (!(await tryCreateFlag(flagKey, env))) throw new Error(`could not create flag ${flagKey} in ${env}`)
    }
    const post = async (items: unknown, as = key, env = envId) => {
      if (Array.isArray(items) && items.length <= 500) {
        const keys = new Set(items.map((i) => (i as { flag_key?: unknown } | null)?.flag_key))
        for (const k of keys) if (typeof k === 'string' && /^[A-Za-z0-9_-]{1,100}$/.test(k)) await tryCreateFlag(k, env)
      }
      return call(path(env), { method: 'POST', as, body: items })
    }
    return {
      h,
      envId,
      key,
      stagingId,
      stagingKey: bearer(staging.key),
      otherProjectEnvId: other.sdk_key.environment_id,
      otherProjectKey: bearer(other.sdk_key.key),
      viewer,
      outsider,
      post,
      postAsIs: (items, as = key, env = envId) => call(path(env), { method: 'POST', as, body: items }),
      createFlag,
      list: (query = '', as = h.admin, env = envId) => call(path(env, query ? `?${query}` : ''), { as }),
      stats: (as = h.admin, env = envId) => call(path(env, '/stats'), { as }),
      dispose: () => h.dispose(),
    }
  } catch (error) {
    await h.dispose()
    throw error
  }
}

/** `n` impressions of one shape, numbered in `user_id` (u0, u1, …) unless given. */
export function impressions(
  n: number,
  fields: { flag_key?: string; value?: string; user_id?: string | null; context?: unknown; evaluated_at?: string } = {},
) {
  return Array.from({ length: n }, (_, i) => ({
    flag_key: 'checkout',
    value: 'true',
    user_id: `u${i}`,
    ...fields,
  }))
}

/** What a suite's tests share: the fixture, started before them and disposed of after. */
export interface ImpressionSuite {
  /** The running fixture (from inside a test or a hook after the suite's own `beforeAll`). */
  fx(): ImpressionFixture
  knex(): Harness['server']['runtime']['knex']
  /** Moves the clock and logs the admin in again (sessions last 7 days). */
  advance(ms: number): Promise<void>
}

/** Starts an impression fixture for the enclosing `describe` and disposes of it after its tests. */
export function impressionSuite(dialect: Dialect, options: Parameters<typeof startHarness>[1] = {}): ImpressionSuite {
  let fixture: ImpressionFixture | undefined
  beforeAll(async () => {
    fixture = await startImpressionFixture(dialect, options)
  })
  afterAll(async () => {
    await fixture?.dispose()
  })
  const fx = () => {
    if (!fixture) throw new Error('the impression fixture starts in beforeAll')
    return fixture
  }
  return {
    fx,
    knex: () => fx().h.server.runtime.knex,
    async advance(ms) {
      const { h } = fx()
      h.clock.advance(ms)
      h.admin = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD)
    },
  }
}
