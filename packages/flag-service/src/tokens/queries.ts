import type { Knex } from 'knex'
import type { AuthUser } from '../auth/context.js'
import { SERVICE_TABLES } from '../tables.js'
import type { TokenRow } from './rows.js'

const T = SERVICE_TABLES
const TOKEN_COLUMNS = ['id', 'user_id', 'name', 'scope', 'prefix', 'created_at', 'last_used_at', 'expires_at'] as const

/** The user of a personal access token that still exists and has not expired at `now`. */
export async function tokenUser(knex: Knex, tokenId: number, now: number): Promise<AuthUser | undefined> {
  const row = (await knex({ t: T.tokens })
    .join({ u: T.users }, 'u.id', 't.user_id')
    .where('t.id', tokenId)
    .andWhere((q) => {
      q.whereNull('t.expires_at').orWhere('t.expires_at', '>', now)
    })
    .first('u.id', 'u.email', 'u.name', 'u.role')) as
    | { id: number | string; email: string; name: string; role: AuthUser['role'] }
    | undefined
  return row ? { id: Number(row.id), email: row.email, name: row.name, role: row.role } : undefined
}

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
