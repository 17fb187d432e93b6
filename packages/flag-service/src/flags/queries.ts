import { TABLES } from '@flagsync/store'
import type { Knex } from 'knex'

/** A flag as stored: its JSON and the revision of its last change. */
export interface StoredFlag {
  data: string
  revision: number | string
}

/** An environment's flags by key, straight from the database (not an instance's live set). */
export const listFlagRows = async (knex: Knex, environmentId: string): Promise<StoredFlag[]> =>
  (await knex(TABLES.flags).where('scope', environmentId).orderBy('key').select('data', 'revision')) as StoredFlag[]

/** One flag of an environment, or undefined when there is none with this key. */
export const flagRow = async (knex: Knex, environmentId: string, key: string): Promise<StoredFlag | undefined> =>
  (await knex(TABLES.flags).where({ scope: environmentId, key }).first('data', 'revision')) as StoredFlag | undefined
