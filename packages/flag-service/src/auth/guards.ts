import { HttpError } from '@flagsync/server-kit'
import type { Request, RequestHandler } from 'express'
import { UUID_PATTERN } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { SERVICE_TABLES } from '../tables.js'
import {
  type AuthContext,
  type AuthUser,
  type EnvironmentAccess,
  type ProjectAccess,
  type Role,
  roleAtLeast,
} from './context.js'
import { userProjectRole } from './project-role.js'

const missingCredentials = () => new HttpError('unauthorized', 'missing or invalid credentials')

/** The caller, or a 401. */
export function authOf(req: Request): AuthContext {
  if (!req.auth) throw missingCredentials()
  return req.auth
}

/** The calling user (session or personal access token), or 401/403 (an SDK key acts for no user). */
export function userOf(req: Request): AuthUser {
  const auth = authOf(req)
  if (!auth.user) {
    throw new HttpError(
      'forbidden',
      'this route needs a user (session or personal access token); an SDK key only manages its own project',
    )
  }
  return auth.user
}

/** The project `loadProject` resolved (a programming error if it did not run). */
export function projectOf(req: Request): ProjectAccess {
  if (!req.project) throw new Error('loadProject must run before this handler')
  return req.project
}

/** The environment `loadEnvironment` resolved. */
export function environmentOf(req: Request): EnvironmentAccess {
  if (!req.environment) throw new Error('loadEnvironment must run before this handler')
  return req.environment
}

/** Any valid credential: session, personal access token or SDK key. */
export const requireAuth: RequestHandler = (req, _res, next) => {
  authOf(req)
  next()
}

/** A user: session or personal access token (403 for an SDK key). */
export const requireUser: RequestHandler = (req, _res, next) => {
  userOf(req)
  next()
}

/** A workspace admin (session or personal access token). */
export const requireWorkspaceAdmin: RequestHandler = (req, _res, next) => {
  if (userOf(req).role !== 'admin') throw new HttpError('forbidden', 'only workspace admins may do this')
  next()
}

/**
 * The role the caller acts with in a project, or undefined when the project is
 * invisible to them:
 * - a workspace admin is admin in every project, member or not;
 * - a server key is admin in its own environment's project and sees no other; a client key is a viewer there
 *   (`authenticate` admits it only to evaluation and impressions: this is the net behind that rule);
 * - a workspace editor has their project role;
 * - a workspace viewer is a viewer wherever they are a member, whatever the project role says.
 */
export async function projectRole(
  runtime: ServiceRuntime,
  auth: AuthContext,
  projectId: string,
): Promise<Role | undefined> {
  if (auth.kind === 'sdk_key') {
    if (auth.sdkKey?.projectId !== projectId) return undefined
    return auth.sdkKey.kind === 'client' ? 'viewer' : 'admin'
  }
  return auth.user ? userProjectRole(runtime.knex, auth.user, projectId) : undefined
}

const noProject = (id: string) => new HttpError('not_found', `no project ${JSON.stringify(id)}`)

/**
 * Resolves `:project_id` to `req.project` with the caller's role. A project
 * the caller cannot see is a 404, exactly like a missing one.
 */
export function loadProject(runtime: ServiceRuntime): RequestHandler {
  return async (req, _res, next) => {
    const auth = authOf(req)
    const id = String(req.params.project_id ?? '')
    if (!UUID_PATTERN.test(id)) throw noProject(id)
    const row = (await runtime.knex(SERVICE_TABLES.projects).where('id', id).first('id', 'name', 'slug')) as
      | { id: string; name: string; slug: string }
      | undefined
    const role = row ? await projectRole(runtime, auth, row.id) : undefined
    if (!row || !role) throw noProject(id)
    req.project = { id: row.id, name: row.name, slug: row.slug, role }
    next()
  }
}

const noEnvironment = (id: string) => new HttpError('not_found', `no environment ${JSON.stringify(id)}`)

/**
 * Resolves `:env_id` to `req.environment` (for `/api/environments/:env_id/…`
 * routes), with the caller's role in its project. Invisible environments are
 * 404s. An SDK key sees every environment of its project.
 */
export function loadEnvironment(runtime: ServiceRuntime): RequestHandler {
  return async (req, _res, next) => {
    const auth = authOf(req)
    const id = String(req.params.env_id ?? '')
    if (!UUID_PATTERN.test(id)) throw noEnvironment(id)
    const row = (await runtime
      .knex(SERVICE_TABLES.environments)
      .where('id', id)
      .first('id', 'project_id', 'name', 'slug', 'is_default', 'require_approval')) as
      | {
          id: string
          project_id: string
          name: string
          slug: string
          is_default: boolean | number
          require_approval: boolean | number
        }
      | undefined
    const role = row ? await projectRole(runtime, auth, row.project_id) : undefined
    if (!row || !role) throw noEnvironment(id)
    req.environment = {
      id: row.id,
      projectId: row.project_id,
      name: row.name,
      slug: row.slug,
      isDefault: Boolean(row.is_default),
      requireApproval: Boolean(row.require_approval),
      role,
    }
    next()
  }
}

/**
 * At least `min` in the project (`loadProject`) or environment
 * (`loadEnvironment`) of the request; 403 otherwise (the caller can see it,
 * so hiding it would be pointless).
 */
export function requireProjectRole(min: Role): RequestHandler {
  return (req, _res, next) => {
    const role = req.project?.role ?? req.environment?.role
    if (!role) throw new Error('loadProject or loadEnvironment must run before requireProjectRole')
    if (!roleAtLeast(role, min)) {
      throw new HttpError('forbidden', `this needs the ${min} role in the project (you are ${role})`)
    }
    next()
  }
}
