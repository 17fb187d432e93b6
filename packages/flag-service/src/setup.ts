import { hashPassword } from './auth/passwords.js'
import type { SetupConfig } from './config.js'
import { createProject } from './projects/queries.js'
import type { ServiceRuntime } from './service-runtime.js'
import { SERVICE_TABLES } from './tables.js'

const WORKSPACE_ID = 1
const DEFAULT_PROJECT_NAME = 'Default'

export type SetupResult =
  | { status: 'created'; workspaceName: string; adminEmail: string; projectId: string; sdkKey: string }
  | { status: 'exists'; workspaceName: string }
  | { status: 'missing' }

/** The workspace, or undefined before setup. */
export async function workspaceOf(runtime: ServiceRuntime): Promise<{ name: string } | undefined> {
  return (await runtime.knex(SERVICE_TABLES.workspace).where('id', WORKSPACE_ID).first('name')) as
    | { name: string }
    | undefined
}

/**
 * On an empty database, creates the workspace, its first admin and a
 * "Default" project (Production, Staging, Development and a Production SDK
 * key), all in one transaction: a workspace always has at least one project,
 * which is what makes "422 on deleting the last project" hold from the start.
 * On a set-up database it changes nothing (the variables are ignored), so
 * restarts and racing instances are safe.
 */
export async function ensureWorkspace(runtime: ServiceRuntime, setup: SetupConfig | undefined): Promise<SetupResult> {
  const existing = await workspaceOf(runtime)
  if (existing) return { status: 'exists', workspaceName: existing.name }
  if (!setup) return { status: 'missing' }
  const passwordHash = await hashPassword(setup.adminPassword)
  return runtime.write(async (trx) => {
    // Re-checked under the write lock: another instance may have set up meanwhile.
    const raced = (await trx(SERVICE_TABLES.workspace).where('id', WORKSPACE_ID).first('name')) as
      | { name: string }
      | undefined
    if (raced) return { status: 'exists', workspaceName: raced.name } as const
    const now = runtime.clock()
    await trx(SERVICE_TABLES.workspace).insert({ id: WORKSPACE_ID, name: setup.workspaceName, created_at: now })
    await trx(SERVICE_TABLES.users).insert({
      email: setup.adminEmail,
      name: setup.adminName,
      role: 'admin',
      password_hash: passwordHash,
      created_at: now,
    })
    const { project, sdkKey } = await createProject(trx, DEFAULT_PROJECT_NAME, now)
    return {
      status: 'created',
      workspaceName: setup.workspaceName,
      adminEmail: setup.adminEmail,
      projectId: project.id,
      sdkKey: sdkKey.key,
    } as const
  })
}
