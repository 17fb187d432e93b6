import { flagKeySchema } from '@flagsync/protocol'
import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { type Request, type Response, Router } from 'express'
import { auditOf } from '../audit/flag-audit.js'
import { roleAtLeast } from '../auth/context.js'
import { projectOf, requireProjectRole } from '../auth/guards.js'
import { segmentUsage } from '../flags/checks.js'
import { segmentScope } from '../flags/expand.js'
import { createSegmentSchema, type Segment, updateSegmentSchema } from '../flags/model.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../http.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { approvalEnvironmentsUsing, listSegmentRows, segmentRow } from './queries.js'

const noSegment = (key: string) => new HttpError('not_found', `no segment ${JSON.stringify(key)} in this project`)

function keyOf(req: Request): string {
  const key = String(req.params.key)
  if (!flagKeySchema.safeParse(key).success) throw noSegment(key)
  return key
}

/**
 * /api/projects/:project_id/segments (after `loadProject`). Segments are not
 * in the spec: a segment is a named list of attribute conditions, and a user
 * is in it when ANY condition matches. Flags of every environment of the
 * project reference them with `{segment_key, variant?}` rules.
 *
 * They are stored in the flag store under scope `seg:<project id>`, so every
 * edit goes through the change log: each instance's stream re-sends the flags
 * that reference the segment, already expanded.
 */
export function createSegmentsRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  const body = jsonBodyFor(options)
  router.get('/', requireProjectRole('viewer'), listSegments(runtime))
  router.get('/:key', requireProjectRole('viewer'), getSegment(runtime))
  router.post('/', requireProjectRole('editor'), ...body, createSegment(runtime))
  router.patch('/:key', requireProjectRole('editor'), ...body, updateSegment(runtime))
  router.delete('/:key', requireProjectRole('editor'), deleteSegment(runtime))
  allowOnly(router, '/', 'GET, POST')
  allowOnly(router, '/:key', 'GET, PATCH, DELETE')
  return router
}

type SegmentHandler = (req: Request, res: Response) => Promise<void>

function listSegments({ knex }: ServiceRuntime): SegmentHandler {
  return async (req, res) => {
    const rows = await listSegmentRows(knex, projectOf(req).id)
    res.type('application/json').send(`[${rows.map((r) => r.data).join(',')}]`)
  }
}

// One segment, with the flags that use it (`used_by`), which is what a delete would be refused for.
function getSegment({ knex }: ServiceRuntime): SegmentHandler {
  return async (req, res) => {
    const key = keyOf(req)
    const projectId = projectOf(req).id
    const row = await segmentRow(knex, projectId, key)
    if (!row) throw noSegment(key)
    res.json({ ...(JSON.parse(row.data) as Segment), used_by: await segmentUsage(knex, projectId, key) })
  }
}

function createSegment(runtime: ServiceRuntime): SegmentHandler {
  return async (req, res) => {
    const input = parseOr422(createSegmentSchema, req.body, 'segment')
    const projectId = projectOf(req).id
    const now = new Date(runtime.clock()).toISOString()
    const segment: Segment = { ...input, created_at: now, updated_at: now }
    await runtime.write(
      async (_trx, flags) => {
        if (await flags.get(input.key, segmentScope(projectId))) {
          throw new HttpError('conflict', `a segment with the key ${JSON.stringify(input.key)} exists in this project`)
        }
        flags.put({ ...segment }, segmentScope(projectId))
      },
      await auditOf(runtime.knex, req),
      req,
    )
    res.json(segment)
  }
}

function updateSegment(runtime: ServiceRuntime): SegmentHandler {
  return async (req, res) => {
    const key = keyOf(req)
    const input = parseOr422(updateSegmentSchema, req.body, 'segment')
    if (input.key !== undefined && input.key !== key) {
      throw new HttpError(
        'validation_failed',
        `invalid segment: key: the key cannot change (is ${JSON.stringify(key)})`,
        {
          issues: [{ path: 'key', message: 'the key cannot change' }],
        },
      )
    }
    const project = projectOf(req)
    const segment = await runtime.write(
      async (trx, flags) => {
        const current = (await flags.get(key, segmentScope(project.id))) as Segment | undefined
        if (!current) throw noSegment(key)
        if (input.rules !== undefined && !roleAtLeast(project.role, 'admin')) {
          // New conditions change flags in every environment using the segment; where approval is required, that
          // would bypass the review, so it is left to project admins (as replacing or deleting a flag there is).
          const guarded = await approvalEnvironmentsUsing(trx, project.id, key)
          if (guarded.length > 0) {
            throw new HttpError(
              'forbidden',
              `flags in ${guarded.join(', ')} (which require approval) use this segment: changing its rules needs the project admin role`,
            )
          }
        }
        const next: Segment = {
          ...current,
          ...(input.name !== undefined ? { name: input.name } : {}),
          ...(input.description !== undefined ? { description: input.description } : {}),
          ...(input.rules !== undefined ? { rules: input.rules } : {}),
          updated_at: new Date(runtime.clock()).toISOString(),
        }
        flags.put({ ...next }, segmentScope(project.id))
        return next
      },
      await auditOf(runtime.knex, req),
      req,
    )
    res.json(segment)
  }
}

function deleteSegment(runtime: ServiceRuntime): SegmentHandler {
  return async (req, res) => {
    const key = keyOf(req)
    const projectId = projectOf(req).id
    await runtime.write(
      async (trx, flags) => {
        if (!(await flags.get(key, segmentScope(projectId)))) throw noSegment(key)
        const usedBy = await segmentUsage(trx, projectId, key)
        if (usedBy.length > 0) {
          const names = usedBy.map((u) => JSON.stringify(u.flag_key))
          throw new HttpError(
            'conflict',
            `segment ${JSON.stringify(key)} is used by ${[...new Set(names)].join(', ')}: remove those rules first`,
            { used_by: usedBy },
          )
        }
        await flags.delete(key, segmentScope(projectId))
      },
      await auditOf(runtime.knex, req),
      req,
    )
    noContent(res)
  }
}
