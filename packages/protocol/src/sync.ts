import * as z from 'zod/mini'
import { revisionSchema } from './audit.js'

// Ids are compared byte for byte by every database: control characters and lone
// surrogates (which some drivers silently turn into U+FFFD, making two ids equal) are refused.
const CONTROL_OR_LONE_SURROGATE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  /[\u0000-\u001f\u007f]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
const idString = (max: number) =>
  z.string().check(
    z.minLength(1),
    z.maxLength(max),
    z.refine((s) => !CONTROL_OR_LONE_SURROGATE.test(s), 'must not contain control characters or unpaired surrogates'),
  )

/** A collection name: 1–128 characters, no control characters or unpaired surrogates. */
export const collectionNameSchema = idString(128)
/** A record id: 1–256 characters, no control characters or unpaired surrogates. */
export const recordIdSchema = idString(256)
const dataSchema = z.record(z.string(), z.unknown())

/** `{action: 'insert', collection, recordId, record}`. */
export const insertOperationSchema = z.strictObject({
  action: z.literal('insert'),
  collection: collectionNameSchema,
  recordId: recordIdSchema,
  record: dataSchema,
  /** The revision of the record as the sender last saw it: the receiver checks for conflicts against it. */
  baseRevision: z.optional(revisionSchema),
})
/** `{action: 'update', collection, recordId, changes}`: `changes` is a merge patch of top-level fields. */
export const updateOperationSchema = z.strictObject({
  action: z.literal('update'),
  collection: collectionNameSchema,
  recordId: recordIdSchema,
  changes: dataSchema,
  /** The revision of the record as the sender last saw it: the receiver checks for conflicts against it. */
  baseRevision: z.optional(revisionSchema),
})
/** The spec leaves the delete payload open; ours carries no data beyond the address. */
export const deleteOperationSchema = z.strictObject({
  action: z.literal('delete'),
  collection: collectionNameSchema,
  recordId: recordIdSchema,
  /** The revision of the record as the sender last saw it: the receiver checks for conflicts against it. */
  baseRevision: z.optional(revisionSchema),
})

/** One operation of a sync batch, told apart by `action`. */
export const operationSchema = z.discriminatedUnion('action', [
  insertOperationSchema,
  updateOperationSchema,
  deleteOperationSchema,
])
/** An insert operation (see {@link insertOperationSchema}). */
export type InsertOperation = z.infer<typeof insertOperationSchema>
/** An update operation (see {@link updateOperationSchema}). */
export type UpdateOperation = z.infer<typeof updateOperationSchema>
/** A delete operation (see {@link deleteOperationSchema}). */
export type DeleteOperation = z.infer<typeof deleteOperationSchema>
/** One operation of a sync batch (see {@link operationSchema}). */
export type Operation = z.infer<typeof operationSchema>
/** `insert`, `update` or `delete`. */
export type OperationAction = Operation['action']

/** A batch id: 1–128 characters chosen by the client, the idempotency key of a delivery. */
export const batchIdSchema = idString(128)

/** The envelope of `POST /sync`: `{batchId, operations}`. */
export const syncBatchSchema = z.strictObject({
  batchId: batchIdSchema,
  operations: z.array(z.unknown()),
})
/** The envelope only: operations are validated one by one so errors can name the index. */
export type SyncBatchEnvelope = z.infer<typeof syncBatchSchema>
/** A sync batch with every operation validated. */
export type SyncBatch = { batchId: string; operations: Operation[] }

/** The receiver's answer to a delivered batch. */
export const syncAckSchema = z.object({
  batchId: batchIdSchema,
  applied: z.number().check(z.int(), z.gte(0)),
  duplicate: z.optional(z.boolean()),
  /**
   * The store's revision once the batch committed; absent for a replay and for a batch that changed nothing. The
   * sync client checks a later edit of a record this batch wrote, made on a base the batch superseded, from here.
   */
  revision: z.optional(revisionSchema),
})
/** The receiver's answer to a delivered batch (see {@link syncAckSchema}). */
export type SyncAck = z.infer<typeof syncAckSchema>
