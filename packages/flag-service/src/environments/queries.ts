import { HttpError } from '@flagsync/server-kit'
import { type FlagWriter, TABLES } from '@flagsync/store'
import type { Knex } from 'knex'
import { UUID_PATTERN } from '../schemas.js'
import { SERVICE_TABLES } from '../tables.js'
import type { EnvironmentRow } from './rows.js'

const T = SERVICE_TABLES
const ENV_COLUMNS = ['id', 'project_id', 'name', 'slug', 'color', 'is_default', 'require_approval', 'created_at']
/** An environment's id and name. */
export interface EnvironmentName {
  id: string
  name: string
}

const unprocessable = (message: string) => new HttpError('validation_failed', message)

export const noEnvironment = (raw: string) =>
  new HttpError('not_found', `no environment ${JSON.stringify(raw)} in this project`)

/** One environment of a project; 404 when the project has none with this id. */
export async function findEnvironment(knex: Knex, projectId: string, id: string): Promise<EnvironmentRow> {
  const row = (await knex(T.environments).where({ project_id: projectId, id }).first(ENV_COLUMNS)) as
    | EnvironmentRow
    | undefined
  if (!row) throw noEnvironment(id)
  return row
}

/** An environment's id and name, or undefined when the project has no environment with this id (or it is no id). */
export async function environmentRef(trx: Knex, projectId: string, id: string): Promise<EnvironmentName | undefined> {
  if (!UUID_PATTERN.test(id)) return undefined
  return (await trx(T.environments).where({ project_id: projectId, id }).first('id', 'name')) as
    | EnvironmentName
    | undefined
}

/** The listed environments of a project that exist (ids that are not one of them are left out), in no order. */
export const environmentRefs = async (
  trx: Knex,
  projectId: string,
  ids: readonly string[],
): Promise<EnvironmentName[]> =>
  (await trx(T.environments)
    .where('project_id', projectId)
    .whereIn(
      'id',
      ids.filter((id) => UUID_PATTERN.test(id)),
    )
    .select('id', 'name')) as EnvironmentName[]

/** The ids of a project's environments. */
export const environmentIds = async (knex: Knex, projectId: string): Promise<string[]> =>
  (await knex(T.environments).where('project_id', projectId).pluck('id')) as string[]

/**
 * Environments (id and project) in the dashboard's order (projects oldest first, then each project's order):
 * the listed ones, those of the projects a user is a member of, or all.
 */
export async function environmentsInOrder(
  knex: Knex,
  which: { ids: readonly string[] } | { memberOf: number } | 'all',
): Promise<Array<{ id: string; project_id: string }>> {
  const query = knex({ e: T.environments })
    .join({ p: T.projects }, 'p.id', 'e.project_id')
    .orderBy([{ column: 'p.created_at' }, { column: 'p.name' }, { column: 'e.position' }])
    .select('e.id', 'e.project_id')
  if (which !== 'all' && 'ids' in which) query.whereIn('e.id', which.ids)
  else if (which !== 'all')
    query.whereIn('e.project_id', knex(T.members).select('project_id').where('user_id', which.memberOf))
  return (await query) as Array<{ id: string; project_id: string }>
}

/** A project's environments in their order. */
export const listEnvironments = async (knex: Knex, projectId: string): Promise<EnvironmentRow[]> =>
  (await knex(T.environments)
    .where('project_id', projectId)
    .select(ENV_COLUMNS)
    .orderBy('position')) as EnvironmentRow[]

/** 404 when the project was deleted since the request loaded it (checked inside the write). */
export async function assertProjectExists(trx: Knex, projectId: string): Promise<void> {
  if (!(await trx(T.projects).where('id', projectId).first('id'))) throw new HttpError('not_found', 'no such project')
}

/** Appends an environment to its project's order; 409 when the project has the slug already. */
export async function insertEnvironment(trx: Knex, row: EnvironmentRow): Promise<void> {
  await assertProjectExists(trx, row.project_id)
  if (await trx(T.environments).where({ project_id: row.project_id, slug: row.slug }).first('id')) {
    throw new HttpError('conflict', `an environment with the slug ${JSON.stringify(row.slug)} exists in this project`)
  }
  const last = await trx(T.environments).where('project_id', row.project_id).max({ p: 'position' }).first()
  await trx(T.environments).insert({ ...row, position: Number(last?.p ?? 0) + 1 })
}

/** Changes an environment's settings (name, color, require_approval); nothing when there is nothing to change. */
export async function updateEnvironment(
  trx: Knex,
  projectId: string,
  id: string,
  changes: Partial<Pick<EnvironmentRow, 'name' | 'color' | 'require_approval'>>,
): Promise<void> {
  if (Object.keys(changes).length > 0) await trx(T.environments).where({ project_id: projectId, id }).update(changes)
}

/** Makes an environment its project's default (and no other); 404 when there is no such environment. */
export async function makeDefaultEnvironment(trx: Knex, projectId: string, id: string): Promise<void> {
  if (!(await trx(T.environments).where({ project_id: projectId, id }).first('id'))) throw noEnvironment(id)
  await trx(T.environments).where('project_id', projectId).whereNot('id', id).update({ is_default: false })
  await trx(T.environments).where({ project_id: projectId, id }).update({ is_default: true })
}

/**
 * Deletes an environment with its flags (through the flag writer, so streams
 * hear of it); its SDK keys cascade. 422 for the project's last or default
 * environment, or the one holding the project's last server keys.
 */
export async function deleteEnvironment(flags: FlagWriter, projectId: string, id: string): Promise<void> {
  const trx = flags.trx
  const env = (await trx(T.environments).where({ project_id: projectId, id }).first('is_default')) as
    | { is_default: boolean | number }
    | undefined
  if (!env) throw noEnvironment(id)
  const count = await trx(T.environments).where('project_id', projectId).count({ n: '*' }).first()
  if (Number(count?.n ?? 0) <= 1) throw unprocessable('cannot delete the last environment of a project')
  if (env.is_default) throw unprocessable('cannot delete the default environment: make another one the default first')
  const keys = await trx(T.sdkKeys)
    .where('project_id', projectId)
    .andWhere('kind', 'server')
    .whereNot('environment_id', id)
    .count({ n: '*' })
    .first()
  if (Number(keys?.n ?? 0) === 0) {
    throw unprocessable(
      "cannot delete the environment holding the project's last server keys: create a server key in another environment first",
    )
  }
  await deleteEnvironmentFlags(flags, [id])
  // Its SDK keys (and whatever later tables reference it) cascade.
  await trx(T.environments).where({ project_id: projectId, id }).delete()
}

/**
 * Deletes the flags of these environments through the flag writer, so each
 * deletion reaches the change log (and connected streams) in the same
 * transaction that removes the environments.
 */
export async function deleteEnvironmentFlags(flags: FlagWriter, environmentIds: readonly string[]): Promise<void> {
  if (environmentIds.length === 0) return
  const rows = (await flags.trx(TABLES.flags).whereIn('scope', environmentIds).select('scope', 'key')) as Array<{
    scope: string
    key: string
  }>
  const byScope = new Map<string, string[]>()
  for (const row of rows) byScope.set(row.scope, [...(byScope.get(row.scope) ?? []), row.key])
  for (const [scope, keys] of byScope) {
    await flags.load(keys, scope) // one query per environment instead of one per flag
    for (const key of keys) await flags.delete(key, scope)
  }
}
