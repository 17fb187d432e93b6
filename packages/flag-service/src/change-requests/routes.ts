import { Router } from 'express'
import { requireProjectRole } from '../auth/guards.js'
import { allowOnly, jsonBodyFor, type RouterOptions } from '../http.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { approveRequest, cancelRequest, rejectRequest } from './decide.js'
import { getRequest, listRequests } from './read.js'

/**
 * /api/environments/:env_id/change-requests (after `loadEnvironment`).
 * Viewers list and read; editors approve and reject; the requester or a
 * workspace admin cancels.
 */
export function createChangeRequestsRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  const body = jsonBodyFor(options)
  router.get('/', requireProjectRole('viewer'), listRequests(runtime))
  router.get('/:id', requireProjectRole('viewer'), getRequest(runtime))
  router.post('/:id/approve', requireProjectRole('editor'), ...body, approveRequest(runtime))
  router.post('/:id/reject', requireProjectRole('editor'), ...body, rejectRequest(runtime))
  router.delete('/:id', requireProjectRole('viewer'), cancelRequest(runtime))
  allowOnly(router, '/', 'GET')
  allowOnly(router, '/:id', 'GET, DELETE')
  allowOnly(router, '/:id/approve', 'POST')
  allowOnly(router, '/:id/reject', 'POST')
  return router
}
