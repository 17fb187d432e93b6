import type { Knex } from 'knex'
import type { TokenRow } from '../records.js'
import { SERVICE_TABLES } from '../tables.js'

const T = SERVICE_TABLES
const TOKEN_COLUMNS = ['id', 'user_id', 'name', 'scope', 'prefix', 'created_at', 'last_used_at', 'expires_at'] as const

/** A user's personal access tokens, oldest first (never their hashes). */
export const listTokens = async (knex: Knex, userId: number): Promise<TokenRow[]> =>
  (await knex(T.tokens).where('user_id', userId).select(TOKEN_COLUMNS).orderBy('id')) as TokenRow[]

/** Inserts a token record (its hash, never the token) and returns its id. */
export async function insertToken(trx: Knex, record: Omit<TokenRow, 'id'> & { token_hash: string }): Promise<number> {
  const [inserted] = (await trx(T.tokens).insert(record, ['id'])) as Array<{ id: number | string }>
  return Number(inserted?.id)
}

/** Deletes one of a user's tokens; false when the user has no such token. */
export async function deleteToken(trx: Knex, userId: number, id: number): Promise<boolean> {
  return (await trx(T.tokens).where({ id, user_id: userId }).delete()) > 0
}
