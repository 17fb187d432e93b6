import { HttpError } from '@flagsync/server-kit'
import type { FlagWriter } from '@flagsync/store'
import type { Role } from '../auth/context.js'
import { environmentRefs, listEnvironments } from '../environments/queries.js'
import { type Archived, type FlagMeta, metaIn, putMeta } from './meta.js'
import type { ServiceFlag } from './model.js'
import { throwUnlessWritten, type WriteTarget, writeFlagIn } from './write-flag.js'

/** The project a lifecycle change runs in, and the caller's role there. */
export interface ProjectTarget {
  id: string
  role: Role
}

const noFlagInProject = (key: string) =>
  new HttpError('not_found', `no flag ${JSON.stringify(key)} in any environment of this project`)

/**
 * Archives a flag in every environment of the project, in the caller's transaction: each environment's definition
 * is deleted through the one write path (streams send the delete, webhooks `flag.deleted`, the audit trail a delete
 * whose source is the archive route) and kept in the flag's metadata, so `restoreFlag` brings back exactly those.
 * Refused as a whole: 404 where no environment has the flag, 409 where it is archived already or another flag lists
 * it as a prerequisite (`dependents`), 403 where an environment requires approval and the caller is no project admin.
 */
export async function archiveFlag(
  flags: FlagWriter,
  project: ProjectTarget,
  key: string,
  archived: { at: string; by: string | null },
): Promise<{ meta: FlagMeta; environments: string[] }> {
  const meta = await metaIn(flags, project.id, key)
  if (meta.archived) throw new HttpError('conflict', `flag ${JSON.stringify(key)} is archived already`)
  const kept: Record<string, ServiceFlag> = {}
  for (const env of await listEnvironments(flags.trx, project.id)) {
    const current = (await flags.get(key, env.id)) as ServiceFlag | undefined
    if (!current) continue
    const target: WriteTarget = { id: env.id, name: env.name, projectId: project.id, role: project.role }
    const result = await writeFlagIn(flags, target, { action: 'delete', key }, { removing: 'archiving a flag' })
    throwUnlessWritten(result)
    kept[env.id] = current
  }
  if (Object.keys(kept).length === 0) throw noFlagInProject(key)
  const next: FlagMeta = { ...meta, archived: { ...archived, flags: kept } }
  await putMeta(flags, project.id, next)
  return { meta: next, environments: Object.keys(kept) }
}

/**
 * Restores an archived flag: its definition in each environment it was archived from (and that still exists) is
 * created again through the one write path, as it was; the metadata keeps its tags and owner. 404 when the key is
 * not archived; 409 where a flag with the key exists again in one of them; 422 where a definition no longer fits
 * its environment (a prerequisite or segment gone since).
 */
export async function restoreFlag(
  flags: FlagWriter,
  project: ProjectTarget,
  key: string,
): Promise<{ meta: FlagMeta; restored: Array<{ environment_id: string; flag: ServiceFlag }> }> {
  const meta = await metaIn(flags, project.id, key)
  const archived: Archived | null = meta.archived
  if (!archived) throw new HttpError('not_found', `no archived flag ${JSON.stringify(key)} in this project`)
  const next: FlagMeta = { ...meta, archived: null }
  await putMeta(flags, project.id, next)
  const envs = await environmentRefs(flags.trx, project.id, Object.keys(archived.flags))
  const restored: Array<{ environment_id: string; flag: ServiceFlag }> = []
  for (const env of envs) {
    const flag = archived.flags[env.id] as ServiceFlag
    if (await flags.get(key, env.id)) {
      throw new HttpError('conflict', `flag ${JSON.stringify(key)} exists again in ${env.name}: nothing was restored`)
    }
    const target: WriteTarget = { id: env.id, name: env.name, projectId: project.id, role: project.role }
    const intent = { action: 'put', key, record: flag } as const
    throwUnlessWritten(await writeFlagIn(flags, target, intent, { what: `flag in ${env.name}`, restoring: true }))
    restored.push({ environment_id: env.id, flag })
  }
  return { meta: next, restored }
}
