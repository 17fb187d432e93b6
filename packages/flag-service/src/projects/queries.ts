import { randomUUID } from 'node:crypto'
import { HttpError } from '@flagsync/server-kit'
import type { FlagWriter } from '@flagsync/store'
import type { Knex } from 'knex'
import { deleteEnvironmentFlags, environmentIds } from '../environments/queries.js'
import { insertSdkKey } from '../sdk-keys/queries.js'
import type { SdkKeyRow } from '../sdk-keys/rows.js'
import { slugify } from '../slug.js'
import { SERVICE_TABLES } from '../tables.js'
import type { ProjectRow } from './rows.js'

const T = SERVICE_TABLES

/** The environments every new project starts with; Production is the default and gets the first SDK key. */
const SEED_ENVIRONMENTS = [
  { name: 'Production', slug: 'production', color: '#ef4444', is_default: true },
  { name: 'Staging', slug: 'staging', color: '#f59e0b', is_default: false },
  { name: 'Development', slug: 'development', color: '#22c55e', is_default: false },
] as const

/** A project's slug from its name, or a 422 when nothing is left of it. */
export function projectSlug(name: string): string {
  const slug = slugify(name)
  if (slug === '') {
    throw new HttpError(
      'validation_failed',
      'invalid project: name: must contain at least one letter or digit (a-z, 0-9)',
      {
        issues: [{ path: 'name', message: 'must contain at least one letter or digit (a-z, 0-9) to derive a slug' }],
      },
    )
  }
  return slug
}

async function assertSlugFree(trx: Knex, slug: string, exceptId?: string): Promise<void> {
  const clash = trx(T.projects).where('slug', slug)
  if (exceptId) clash.whereNot('id', exceptId)
  if (await clash.first('id')) throw new HttpError('conflict', `a project with the slug ${JSON.stringify(slug)} exists`)
}

/**
 * Creates a project with Production (default), Staging and Development and an
 * SDK key for Production, in the caller's transaction. 409 when the slug is taken.
 */
export async function createProject(
  trx: Knex,
  name: string,
  now: number,
): Promise<{ project: ProjectRow; sdkKey: { row: SdkKeyRow; key: string } }> {
  const slug = projectSlug(name)
  await assertSlugFree(trx, slug)
  const project: ProjectRow = { id: randomUUID(), name, slug, created_at: now }
  await trx(T.projects).insert(project)
  const environments = SEED_ENVIRONMENTS.map((env, i) => ({
    id: randomUUID(),
    project_id: project.id,
    ...env,
    require_approval: false,
    position: i + 1,
    created_at: now,
  }))
  await trx(T.environments).insert(environments)
  const production = environments[0] as (typeof environments)[number]
  const sdkKey = await insertSdkKey(trx, {
    projectId: project.id,
    environmentId: production.id,
    environmentName: production.name,
    name: `${production.name} key`,
    now,
  })
  return { project: { ...project, environment_count: environments.length, member_count: 0 }, sdkKey }
}

/** Projects with their environment and member counts. */
function projectsQuery(knex: Knex): Knex.QueryBuilder {
  return knex({ p: T.projects })
    .select(
      'p.id',
      'p.name',
      'p.slug',
      'p.created_at',
      knex(T.environments).count('*').whereRaw('?? = ??', ['project_id', 'p.id']).as('environment_count'),
      knex(T.members).count('*').whereRaw('?? = ??', ['project_id', 'p.id']).as('member_count'),
    )
    .orderBy([{ column: 'p.created_at' }, { column: 'p.name' }])
}

/** Which projects a caller sees: one (an SDK key's), those a user is a member of, or all (a workspace admin's). */
export type ProjectVisibility = { projectId: string } | { memberOf: number } | 'all'

/** The projects a caller sees, oldest first. */
export async function listProjects(knex: Knex, visibility: ProjectVisibility): Promise<ProjectRow[]> {
  const query = projectsQuery(knex)
  if (visibility === 'all') return (await query) as ProjectRow[]
  if ('projectId' in visibility) return (await query.where('p.id', visibility.projectId)) as ProjectRow[]
  const memberships = knex(T.members).select('project_id').where('user_id', visibility.memberOf)
  return (await query.whereIn('p.id', memberships)) as ProjectRow[]
}

export async function projectRow(knex: Knex, id: string): Promise<ProjectRow | undefined> {
  return (await projectsQuery(knex).where('p.id', id).first()) as ProjectRow | undefined
}

/** Renames a project; false when it is gone. 409 when another project has the slug. */
export async function renameProject(trx: Knex, id: string, name: string, slug: string): Promise<boolean> {
  await assertSlugFree(trx, slug, id)
  return (await trx(T.projects).where('id', id).update({ name, slug })) > 0
}

/**
 * Deletes a project: its environments' flags, its segments and its flags' metadata (`projectScopes`) through the
 * flag writer (so every stream hears of it); environments, members and SDK
 * keys (and whatever later tables reference them) cascade. 404 when it is
 * gone, 422 for the workspace's last project.
 */
export async function deleteProject(flags: FlagWriter, id: string, projectScopes: readonly string[]): Promise<void> {
  const trx = flags.trx
  const total = await trx(T.projects).count({ n: '*' }).first()
  if (!(await trx(T.projects).where('id', id).first('id'))) throw new HttpError('not_found', 'no such project')
  if (Number(total?.n ?? 0) <= 1) {
    throw new HttpError('validation_failed', 'cannot delete the last project: a workspace keeps at least one')
  }
  await deleteEnvironmentFlags(flags, [...(await environmentIds(trx, id)), ...projectScopes])
  await trx(T.projects).where('id', id).delete()
}
