import * as z from 'zod/mini'

/**
 * A change-log revision: what every flag the servers return carries as its
 * read-only `revision`, and what a sync operation sends back as `baseRevision`.
 */
export const revisionSchema = z.number().check(z.int(), z.gte(0))

// Query parameters arrive as strings; a repeated one arrives as an array and is refused.
const revisionParam = z.pipe(
  z.string().check(z.regex(/^\d{1,15}$/, 'must be a non-negative integer')),
  z.transform(Number),
)
const limitParam = z.pipe(
  z.string().check(z.regex(/^\d{1,4}$/, 'must be an integer from 1 to 1000')),
  z.pipe(z.transform(Number), z.number().check(z.gte(1, 'must be at least 1'), z.lte(1000, 'must be at most 1000'))),
)

/** Entries in an audit page when the query names no `limit`. */
export const AUDIT_PAGE_SIZE = 100

/** The query of `GET /api/changes` and `GET /api/flags/:key/history`: `since`, `cursor` (a `nextCursor`), `limit`. */
export const auditQuerySchema = z.strictObject({
  since: z.optional(revisionParam),
  cursor: z.optional(revisionParam),
  limit: z.optional(limitParam),
})
/** A validated audit query (see {@link auditQuerySchema}). */
export type AuditQuery = z.output<typeof auditQuerySchema>

const storedFlag = z.nullable(z.looseObject({ key: z.string() }))

/** An authenticated identity the audit trail names. */
const verifiedActor = z.object({ name: z.string(), verified: z.literal(true) })

/** One entry of the audit trail as the audit routes send it. */
export const auditEntrySchema = z.object({
  revision: revisionSchema,
  /** ISO 8601 commit time. */
  time: z.string(),
  key: z.string(),
  action: z.enum(['create', 'update', 'delete']),
  before: storedFlag,
  /** False when the previous state was pruned: then `before` is null and `changedFields` lists every field. */
  beforeKnown: z.boolean(),
  after: storedFlag,
  changedFields: z.array(z.string()),
  /** The authenticated identity (the token used). */
  actor: z.nullable(verifiedActor),
  /** What the client declared in `X-Flagsync-Actor`: recorded as sent, never verified. */
  declaredActor: z.nullable(z.object({ name: z.string(), verified: z.literal(false) })),
  source: z.nullable(
    z.union([
      z.object({ type: z.literal('api'), route: z.string() }),
      z.object({ type: z.literal('sync'), batchId: z.string(), operationIndex: z.number().check(z.int()) }),
      /**
       * The flag service: the approval of this change request applied the change. `actor` is the approver,
       * `requestedBy` who filed the request (absent where the request is not known).
       */
      z.object({
        type: z.literal('change_request'),
        id: z.number().check(z.int()),
        requestedBy: z.optional(verifiedActor),
      }),
      /**
       * The flag service: this schedule applied the change at its `run_at`. The change is its creator's: `actor`
       * and `createdBy` name them; `approvedBy` whoever approved the schedule (absent where nobody did).
       */
      z.object({
        type: z.literal('schedule'),
        id: z.number().check(z.int()),
        createdBy: verifiedActor,
        approvedBy: z.optional(verifiedActor),
      }),
      z.object({ type: z.literal('other'), name: z.string() }),
    ]),
  ),
})
/** One audit entry (see {@link auditEntrySchema}). */
export type AuditEntryWire = z.infer<typeof auditEntrySchema>

/** A page of audit entries, newest first; `nextCursor` (null on the last page) fetches the next, older one. */
export const auditPageSchema = z.object({ entries: z.array(auditEntrySchema), nextCursor: z.nullable(z.string()) })
/** A page of audit entries (see {@link auditPageSchema}). */
export type AuditPageWire = z.infer<typeof auditPageSchema>

/**
 * One entry of the flag service's audit routes: a flag's change (`collection: 'flags'`, `environment_id` its
 * environment) or a segment's (`collection: 'segments'`, `key` the segment's, `environment_id` null: segments
 * belong to the project). A flag's history lists the changes of the segments its rules referenced at the time.
 */
export const serviceAuditEntrySchema = z.extend(auditEntrySchema, {
  collection: z.enum(['flags', 'segments']),
  environment_id: z.nullable(z.string()),
})
/** One entry of the flag service's audit trail (see {@link serviceAuditEntrySchema}). */
export type ServiceAuditEntryWire = z.infer<typeof serviceAuditEntrySchema>

/** A page of the flag service's audit entries, newest first (see {@link auditPageSchema}). */
export const serviceAuditPageSchema = z.object({
  entries: z.array(serviceAuditEntrySchema),
  nextCursor: z.nullable(z.string()),
})
/** A page of the flag service's audit entries (see {@link serviceAuditPageSchema}). */
export type ServiceAuditPageWire = z.infer<typeof serviceAuditPageSchema>

/** One conflicting operation of a 409 from the receiver. */
export const syncConflictSchema = z.object({
  operationIndex: z.number().check(z.int(), z.gte(0)),
  collection: z.string(),
  recordId: z.string(),
  kind: z.enum(['field', 'deleted', 'exists']),
  fields: z.array(z.string()),
  /** The record at the base revision; null where absent or no longer known. */
  base: z.nullable(z.record(z.string(), z.unknown())),
  /** The record now; null where absent. */
  current: z.nullable(z.record(z.string(), z.unknown())),
  currentRevision: z.nullable(revisionSchema),
  reason: z.string(),
})
/** One conflicting operation (see {@link syncConflictSchema}). */
export type SyncConflict = z.infer<typeof syncConflictSchema>

/** The body of the receiver's 409: nothing of the batch was applied. */
export const conflictBodySchema = z.object({
  error: z.string(),
  code: z.literal('conflict'),
  conflicts: z.array(syncConflictSchema),
})
/** The body of the receiver's 409 (see {@link conflictBodySchema}). */
export type ConflictBody = z.infer<typeof conflictBodySchema>
