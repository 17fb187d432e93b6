import type { Knex } from 'knex'
import { displayPrefix, generateSecret, hashSecret, SDK_KEY_PREFIXES, type SdkKeyKind } from '../auth/secrets.js'
import { SERVICE_TABLES } from '../tables.js'
import type { SdkKeyRow } from './rows.js'

const T = SERVICE_TABLES

/** A project's SDK keys with their environments' names (kind and display prefix; never a hash). */
export const listSdkKeys = async (knex: Knex, projectId: string): Promise<SdkKeyRow[]> =>
  (await knex({ k: T.sdkKeys })
    .join({ e: T.environments }, 'e.id', 'k.environment_id')
    .where('k.project_id', projectId)
    .select(
      'k.id',
      'k.project_id',
      'k.environment_id',
      'e.name as environment_name',
      'k.name',
      'k.kind',
      'k.prefix',
      'k.created_at',
    )
    .orderBy('k.id')) as SdkKeyRow[]

/** Inserts an SDK key and returns its row and, this once, its full value. */
export async function insertSdkKey(
  trx: Knex,
  input: {
    projectId: string
    environmentId: string
    environmentName: string
    name: string
    now: number
    kind?: SdkKeyKind
  },
): Promise<{ row: SdkKeyRow; key: string }> {
  const kind = input.kind ?? 'server'
  const key = generateSecret(SDK_KEY_PREFIXES[kind])
  const record = {
    project_id: input.projectId,
    environment_id: input.environmentId,
    name: input.name,
    kind,
    key_hash: hashSecret(key),
    prefix: displayPrefix(key),
    created_at: input.now,
  }
  const [inserted] = (await trx(T.sdkKeys).insert(record, ['id'])) as Array<{ id: number | string }>
  const row: SdkKeyRow = {
    id: Number(inserted?.id),
    project_id: record.project_id,
    environment_id: record.environment_id,
    environment_name: input.environmentName,
    name: record.name,
    kind,
    prefix: record.prefix,
    created_at: record.created_at,
  }
  return { row, key }
}

/** A key's kind, or undefined when the project has no such key. */
export const sdkKeyKind = async (trx: Knex, projectId: string, id: number): Promise<SdkKeyKind | undefined> =>
  ((await trx(T.sdkKeys).where({ project_id: projectId, id }).first('kind')) as { kind: SdkKeyKind } | undefined)?.kind

/** How many server keys a project has. */
export async function serverKeyCount(trx: Knex, projectId: string): Promise<number> {
  const count = await trx(T.sdkKeys).where({ project_id: projectId, kind: 'server' }).count({ n: '*' }).first()
  return Number(count?.n ?? 0)
}

/** Deletes one of a project's keys. */
export async function deleteSdkKey(trx: Knex, projectId: string, id: number): Promise<void> {
  await trx(T.sdkKeys).where({ project_id: projectId, id }).delete()
}
