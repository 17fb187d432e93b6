import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { type FlagWriter, TABLES } from '@flagsync/store'
import type { Knex } from 'knex'
import { z } from 'zod'
import { environmentIds } from '../environments/queries.js'
import { SERVICE_TABLES } from '../tables.js'
import type { ServiceFlag } from './model.js'

/**
 * A flag's project-level metadata: its tags, its owner and, while it is archived, the definitions it had in each
 * environment. Tags and owner describe the flag, not an environment's rules, so there is one record per (project,
 * key). It lives in the flag store under the scope `meta:<project id>` (as segments live under `seg:`), so every
 * change reaches the change log and the audit trail, commits in the same transaction as the flag writes it goes
 * with, and never reaches an SDK: streams, snapshots, OFREP and webhooks serve environment scopes only.
 */
const META_SCOPE_PREFIX = 'meta:'
export const metaScope = (projectId: string) => `${META_SCOPE_PREFIX}${projectId}`
export const isMetaScope = (scope: string) => scope.startsWith(META_SCOPE_PREFIX)

/** The most tags a flag has; a tag is 1–32 characters of `[a-z0-9]` then `[a-z0-9-_.:]`, stored lower-cased. */
const MAX_TAGS = 20
export const TAG_PATTERN = /^[a-z0-9][a-z0-9\-_.:]{0,31}$/
export const TAG_MESSAGE = 'must be 1–32 characters: a letter or digit, then letters, digits, -, _, . or :'

const tagSchema = z.string().trim().toLowerCase().regex(TAG_PATTERN, TAG_MESSAGE)

/** Tags as sent: each one normalized, duplicates dropped, sorted so equal sets compare equal. */
const tagsSchema = z
  .array(tagSchema)
  .max(MAX_TAGS, `at most ${MAX_TAGS} tags`)
  .transform((tags) => [...new Set(tags)].sort())

/** A user id: the users table's integer range, so a number past it is a 422 here and never a database error. */
const ownerSchema = z.number().int().positive().max(2_147_483_647).nullable()

/** The metadata fields a flag body or `PATCH …/flags/:key/meta` may set. */
export const metaFieldsSchema = z.strictObject({ tags: tagsSchema.optional(), owner: ownerSchema.optional() })
export type MetaFields = z.output<typeof metaFieldsSchema>

export const metaPatchSchema = metaFieldsSchema.refine((v) => v.tags !== undefined || v.owner !== undefined, {
  error: 'send tags or owner',
  when: (payload) => payload.issues.length === 0,
})

/**
 * The body of archive and restore: none (or `{}`). Both act on every environment of the project, so a field such as
 * `environments` is a 422 naming it rather than a request obeyed for more than it asked.
 */
export const lifecycleActionSchema = z.strictObject({}).optional()

/** An archived flag: when, by whom, and its definition in each environment it was in (by environment id). */
export interface Archived {
  at: string
  by: string | null
  flags: Record<string, ServiceFlag>
}

/** The stored record (scope `meta:<project>`, key = the flag key). */
export interface FlagMeta {
  key: string
  tags: string[]
  owner: number | null
  archived: Archived | null
}

export const emptyMeta = (key: string): FlagMeta => ({ key, tags: [], owner: null, archived: null })

/** Fields a flag read carries that a write does not store in the flag: accepted and set (tags, owner) or ignored. */
const READ_ONLY = ['last_changed_at', 'last_evaluated_at', 'stale', 'archived'] as const

/**
 * Splits a flag body into the flag and its metadata fields, so a flag read with GET can be sent back as is:
 * `tags`/`owner` are validated (422 naming the field) and returned apart; the read-only lifecycle fields dropped.
 */
export function splitMeta(body: unknown): { record: unknown; meta: MetaFields } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { record: body, meta: {} }
  const record: Record<string, unknown> = { ...(body as Record<string, unknown>) }
  const sent: Record<string, unknown> = {}
  for (const field of ['tags', 'owner'] as const) {
    if (Object.hasOwn(record, field)) sent[field] = record[field]
    delete record[field]
  }
  for (const field of READ_ONLY) delete record[field]
  return { record, meta: parseOr422(metaFieldsSchema, sent, 'flag') }
}

/**
 * The definition in a flag read, for a call that evaluates rather than saves it (`POST …/evaluate`'s `flags`):
 * without its `revision`, its metadata and its read-only lifecycle fields, so a read can be sent as is there too.
 */
export function definitionOf(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body
  const record: Record<string, unknown> = { ...(body as Record<string, unknown>) }
  for (const field of ['revision', 'tags', 'owner', ...READ_ONLY]) delete record[field]
  return record
}

/** The metadata record of a key, as this transaction sees it; the empty record when there is none. */
export async function metaIn(flags: FlagWriter, projectId: string, key: string): Promise<FlagMeta> {
  const stored = (await flags.get(key, metaScope(projectId))) as FlagMeta | undefined
  return stored ? { ...emptyMeta(key), ...stored } : emptyMeta(key)
}

/** Stages a metadata record; an empty one is removed, so a project's untagged flags hold no record. */
export async function putMeta(flags: FlagWriter, projectId: string, meta: FlagMeta): Promise<void> {
  const scope = metaScope(projectId)
  if (meta.tags.length === 0 && meta.owner === null && meta.archived === null) {
    if (await flags.get(meta.key, scope)) await flags.delete(meta.key, scope)
    return
  }
  flags.put({ ...meta }, scope)
}

/**
 * Applies sent metadata fields in the transaction; an owner who is not a workspace user is a 422 naming `owner`,
 * its message naming `what` was sent (a flag, or metadata alone).
 */
export async function applyMeta(
  flags: FlagWriter,
  projectId: string,
  key: string,
  fields: MetaFields,
  what = 'flag',
): Promise<FlagMeta> {
  const current = await metaIn(flags, projectId, key)
  if (fields.tags === undefined && fields.owner === undefined) return current
  if (fields.owner != null && !(await userExists(flags.trx, fields.owner))) {
    const message = `no workspace user with id ${fields.owner}`
    throw new HttpError('validation_failed', `invalid ${what}: owner: ${message}`, {
      issues: [{ path: 'owner', message }],
    })
  }
  const next = { ...current, ...definedOf(fields) }
  await putMeta(flags, projectId, next)
  return next
}

const definedOf = (fields: MetaFields): Partial<FlagMeta> =>
  Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Partial<FlagMeta>

async function userExists(trx: Knex, id: number): Promise<boolean> {
  return Boolean(await trx(SERVICE_TABLES.users).where('id', id).first('id'))
}

/** Every metadata record of a project, by flag key, straight from the database. */
export async function projectMeta(knex: Knex, projectId: string): Promise<Map<string, FlagMeta>> {
  const rows = (await knex(TABLES.flags).where('scope', metaScope(projectId)).select('key', 'data')) as Array<{
    key: string
    data: string
  }>
  return new Map(rows.map((r) => [r.key, { ...emptyMeta(r.key), ...(JSON.parse(r.data) as FlagMeta) }]))
}

/** One key's metadata record, straight from the database; the empty record when there is none. */
export async function flagMeta(knex: Knex, projectId: string, key: string): Promise<FlagMeta> {
  const row = (await knex(TABLES.flags)
    .where({ scope: metaScope(projectId), key })
    .first('data')) as { data: string } | undefined
  return row ? { ...emptyMeta(key), ...(JSON.parse(row.data) as FlagMeta) } : emptyMeta(key)
}

/**
 * The create check of every write path (`writeFlagIn`): creating a flag whose key is archived in the project is a
 * 409 naming the archived flag, so a restore never meets a stranger of the same key. Replacing a live flag is not
 * a create: a key is archived only while no environment has it.
 */
export async function assertCreatable(flags: FlagWriter, projectId: string, key: string, scope: string) {
  const { archived } = await metaIn(flags, projectId, key)
  if (!archived || (await flags.get(key, scope))) return
  throw new HttpError(
    'conflict',
    `flag ${JSON.stringify(key)} is archived (since ${archived.at}): restore it, or choose another key`,
    { archived: { key, at: archived.at } },
  )
}

/** Whether the project has the flag: live in one of its environments, or archived. */
export async function flagInProject(flags: FlagWriter, projectId: string, key: string): Promise<boolean> {
  if ((await metaIn(flags, projectId, key)).archived) return true
  for (const id of await environmentIds(flags.trx, projectId)) if (await flags.get(key, id)) return true
  return false
}
