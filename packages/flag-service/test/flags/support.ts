import { TABLES } from '@flagsync/store'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import type { Knex } from 'knex'
import { expect } from 'vitest'
import { CHANGE_REQUESTS_TABLE } from '../../src/flags/index.js'
import type { Caller, Harness, Json } from '../harness.js'

export interface Project {
  id: string
  /** The seeded Production SDK key, in clear. */
  sdkKey: string
  production: string
  staging: string
  development: string
}

let counter = 0
/** A name no other test of the run uses. */
export const unique = (prefix = 'p') => `${prefix}-${++counter}-${Date.now().toString(36)}`

/** A fresh project (Production, Staging, Development and a Production SDK key), so tests do not share flags. */
export async function createProject(h: Harness, name = unique('Project')): Promise<Project> {
  const created = await h.call('/api/projects', { method: 'POST', as: h.admin, body: { name } })
  if (created.status !== 200) throw new Error(`project: ${created.status} ${JSON.stringify(created.body)}`)
  const envs = (await h.call(`/api/projects/${created.body.id}/environments`, { as: h.admin })).body as Array<{
    id: string
    slug: string
  }>
  const id = (slug: string) => envs.find((e) => e.slug === slug)?.id as string
  return {
    id: created.body.id,
    sdkKey: created.body.sdk_key.key,
    production: id('production'),
    staging: id('staging'),
    development: id('development'),
  }
}

/** A new SDK key bound to an environment of the project. */
export async function sdkKeyFor(h: Harness, projectId: string, environmentId: string): Promise<string> {
  const res = await h.call(`/api/projects/${projectId}/keys`, {
    method: 'POST',
    as: h.admin,
    body: { name: unique('key'), environment_id: environmentId },
  })
  if (res.status !== 200) throw new Error(`key: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.key as string
}

/** A user with a workspace role, optionally a member of a project, logged in. */
export async function member(
  h: Harness,
  projectId: string | undefined,
  workspaceRole: 'admin' | 'editor' | 'viewer',
  projectRole?: 'admin' | 'editor' | 'viewer',
): Promise<{ as: Caller; id: number; email: string }> {
  const email = `${unique('user')}@example.com`
  const id = await h.createUser({ email, role: workspaceRole, password: 'password-123' })
  if (projectId && projectRole) {
    const res = await h.call(`/api/projects/${projectId}/members`, {
      method: 'POST',
      as: h.admin,
      body: { user_id: id, role: projectRole },
    })
    if (res.status !== 200) throw new Error(`member: ${res.status}`)
  }
  return { as: await h.login(email, 'password-123'), id, email }
}

/** The fields a flag read carries beside the definition and its revision (`lifecycle.test.ts` asserts them). */
const LIFECYCLE_FIELDS = ['tags', 'owner', 'last_changed_at', 'last_evaluated_at', 'stale'] as const

/** A read flag without its lifecycle fields: the definition and `revision`, what the write tests compare. */
export function definitionOf(flag: Json): Json {
  if (typeof flag !== 'object' || flag === null || Array.isArray(flag)) return flag
  const out = { ...flag }
  for (const field of LIFECYCLE_FIELDS) delete out[field]
  return out
}

/** A read's answer with each flag as `definitionOf` tells it. */
function definitions<T extends { status: number; body: Json }>(read: T): T {
  const body = Array.isArray(read.body) ? read.body.map(definitionOf) : definitionOf(read.body)
  return read.status === 200 ? { ...read, body } : read
}

/** Flag routes of one environment, as one caller; `list` and `get` answer definitions (`definitionOf`). */
export function flagsOf(h: Harness, environmentId: string, as: Caller = h.admin) {
  const base = `/api/environments/${environmentId}/flags`
  return {
    list: async () => definitions(await h.call(base, { as })),
    get: async (key: string) => definitions(await h.call(`${base}/${key}`, { as })),
    put: (flag: Json) => h.call(base, { method: 'POST', as, body: flag }),
    patch: (key: string, patch: Json) => h.call(`${base}/${key}`, { method: 'PATCH', as, body: patch }),
    delete: (key: string) => h.call(`${base}/${key}`, { method: 'DELETE', as }),
    promote: (key: string, target: string) =>
      h.call(`${base}/${key}/promote`, { method: 'POST', as, body: { target_env_id: target } }),
  }
}

/** Puts a flag as the admin and fails the test unless it is accepted. */
export async function putFlag(h: Harness, environmentId: string, flag: Json): Promise<Json> {
  const res = await flagsOf(h, environmentId).put(flag)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body
}

export async function setRequireApproval(h: Harness, project: Project, environmentId: string, on: boolean) {
  const res = await h.call(`/api/projects/${project.id}/environments/${environmentId}/require-approval`, {
    method: 'POST',
    as: h.admin,
    body: { require_approval: on },
  })
  expect(res.status).toBe(200)
}

/** Opens /stream with an SDK key in the Authorization header (or any headers). */
export function openStream(
  h: Harness,
  headers: Record<string, string>,
  query = '',
): Promise<SseReader & { status: number }> {
  return openSse(`${h.url}/stream${query}`, headers)
}
export const keyHeader = (key: string) => ({ Authorization: `Bearer ${key}` })

/** The events of a stream after `from`, parsed: `[event, data]`. */
export function parsed(reader: SseReader, from = 0): Array<[string, Json]> {
  return reader.events.slice(from).map((e) => [e.event ?? 'message', JSON.parse(e.data)])
}

/** Waits for the `ready` event and returns the bootstrap (connected data, UPSERT flags by key, ready count). */
export async function bootstrapOf(reader: SseReader): Promise<{ connected: Json; flags: Json[]; ready: Json }> {
  await reader.waitFor((e) => e.event === 'ready')
  const events = parsed(reader)
  const readyAt = events.findIndex(([name]) => name === 'ready')
  const [first, ...rest] = events.slice(0, readyAt + 1)
  expect(first?.[0]).toBe('connected')
  const updates = rest.slice(0, -1)
  for (const [name, data] of updates) {
    expect(name).toBe('update')
    expect(data.type).toBe('UPSERT')
  }
  return { connected: first?.[1], flags: updates.map(([, d]) => d), ready: events[readyAt]?.[1] }
}

/** Rows of the change-request table (not in SERVICE_TABLES, so `h.dump()` does not see it). */
export async function changeRequestRows(h: Harness): Promise<unknown[]> {
  return h.server.runtime.knex(CHANGE_REQUESTS_TABLE).select('*').orderBy('id')
}

/** Everything a refused request must leave alone: every table of the service, the flag store and change requests. */
export async function snapshotOfDatabase(h: Harness): Promise<Record<string, unknown[]>> {
  return { ...(await h.dump()), [CHANGE_REQUESTS_TABLE]: await changeRequestRows(h) }
}

/** The change-log revision the store holds for a flag of an environment (what its read-only `revision` must say). */
export async function storeRevision(knex: Knex, environmentId: string, key: string): Promise<number> {
  const row = (await knex(TABLES.flags).where({ scope: environmentId, key }).first('revision')) as
    | { revision: number | string }
    | undefined
  if (!row) throw new Error(`no flag ${key} in ${environmentId}`)
  const revision = Number(row.revision)
  expect(revision).toBeGreaterThan(0)
  return revision
}

/** A flag as the service answers it: the stored flag plus its read-only `revision`, the store's. */
export async function served(h: Harness, environmentId: string, flag: Json): Promise<Json> {
  return { ...flag, revision: await storeRevision(h.server.runtime.knex, environmentId, flag.key) }
}
