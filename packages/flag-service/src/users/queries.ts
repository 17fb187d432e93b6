import { HttpError } from '@flagsync/server-kit'
import type { Knex } from 'knex'
import type { Role } from '../auth/context.js'
import { SERVICE_TABLES } from '../tables.js'
import type { UserRow } from './rows.js'

const T = SERVICE_TABLES
const USER_COLUMNS = ['id', 'email', 'name', 'role', 'created_at'] as const

/** Every user of the workspace, oldest first. */
export const listUsers = async (knex: Knex): Promise<UserRow[]> =>
  (await knex(T.users).select(USER_COLUMNS).orderBy('id')) as UserRow[]

/** Inserts a user; 409 when the (lower-cased) email is in use. */
export async function insertUser(
  trx: Knex,
  input: { email: string; name: string; role: Role; passwordHash: string; now: number },
): Promise<UserRow> {
  if (await trx(T.users).where('email', input.email).first('id')) {
    throw new HttpError('conflict', `the email ${JSON.stringify(input.email)} is in use`)
  }
  const record = {
    email: input.email,
    name: input.name,
    role: input.role,
    password_hash: input.passwordHash,
    created_at: input.now,
  }
  const [inserted] = (await trx(T.users).insert(record, ['id'])) as Array<{ id: number | string }>
  return { ...record, id: Number(inserted?.id) }
}

/** How many workspace admins there are. */
async function adminCount(trx: Knex): Promise<number> {
  const admins = await trx(T.users).where('role', 'admin').count({ n: '*' }).first()
  return Number(admins?.n ?? 0)
}

/**
 * The last-admin rule, for every write that takes the admin role from a user (deleting or demoting them): true
 * when `role` (the user's current one) is admin and no other admin exists. Run it inside the write transaction:
 * writes serialize on the store's lock, so two admins demoting each other cannot both pass.
 */
export async function isLastAdmin(trx: Knex, role: string): Promise<boolean> {
  return role === 'admin' && (await adminCount(trx)) <= 1
}

/** A user with their password hash, by id. */
export const userById = async (trx: Knex, id: number): Promise<UserRow | undefined> =>
  (await trx(T.users).where('id', id).first('id', 'email', 'name', 'role', 'password_hash', 'created_at')) as
    | UserRow
    | undefined

/** Sets a user's role and/or name. */
export async function updateUser(trx: Knex, id: number, changes: { role?: Role; name?: string }): Promise<void> {
  await trx(T.users).where('id', id).update(changes)
}

/**
 * Sets a user's password hash and ends their sessions (all but `keepSessionHash`, the caller's own) and, with
 * `revokeTokens`, their personal access tokens. Resolves how many of each ended.
 */
export async function setPassword(
  trx: Knex,
  id: number,
  passwordHash: string,
  options: { keepSessionHash?: string; revokeTokens: boolean },
): Promise<{ sessions: number; tokens: number }> {
  await trx(T.users).where('id', id).update({ password_hash: passwordHash })
  const sessions = trx(T.sessions).where('user_id', id)
  if (options.keepSessionHash !== undefined) sessions.whereNot('id_hash', options.keepSessionHash)
  const ended = await sessions.delete()
  const tokens = options.revokeTokens ? await trx(T.tokens).where('user_id', id).delete() : 0
  return { sessions: ended, tokens }
}

/** Deletes a user; sessions, tokens and project memberships go with it (ON DELETE CASCADE). */
export async function deleteUser(trx: Knex, id: number): Promise<void> {
  await trx(T.users).where('id', id).delete()
}

/** A user with their password hash, by (lower-cased) email: for login only. */
export const userByEmail = async (knex: Knex, email: string): Promise<UserRow | undefined> =>
  (await knex(T.users).where('email', email).first('id', 'email', 'name', 'role', 'password_hash')) as
    | UserRow
    | undefined
