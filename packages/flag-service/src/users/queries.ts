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

/** A user's role, or undefined when there is no such user. */
export const userRole = async (trx: Knex, id: number): Promise<string | undefined> =>
  ((await trx(T.users).where('id', id).first('id', 'role')) as { role: string } | undefined)?.role

/** How many workspace admins there are. */
export async function adminCount(trx: Knex): Promise<number> {
  const admins = await trx(T.users).where('role', 'admin').count({ n: '*' }).first()
  return Number(admins?.n ?? 0)
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
