import { z } from 'zod'

// Ids are compared byte for byte by every database: control characters and lone
// surrogates (which some drivers silently turn into U+FFFD, making two ids equal) are refused.
const CONTROL_OR_LONE_SURROGATE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  /[\u0000-\u001f\u007f]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
const idString = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine((s) => !CONTROL_OR_LONE_SURROGATE.test(s), 'must not contain control characters or unpaired surrogates')

export const collectionNameSchema = idString(128)
export const recordIdSchema = idString(256)
const dataSchema = z.record(z.string(), z.unknown())

export const insertOperationSchema = z.strictObject({
  action: z.literal('insert'),
  collection: collectionNameSchema,
  recordId: recordIdSchema,
  record: dataSchema,
})
export const updateOperationSchema = z.strictObject({
  action: z.literal('update'),
  collection: collectionNameSchema,
  recordId: recordIdSchema,
  changes: dataSchema,
})
/** The spec leaves the delete payload open; ours carries no data beyond the address. */
export const deleteOperationSchema = z.strictObject({
  action: z.literal('delete'),
  collection: collectionNameSchema,
  recordId: recordIdSchema,
})

export const operationSchema = z.discriminatedUnion('action', [
  insertOperationSchema,
  updateOperationSchema,
  deleteOperationSchema,
])
export type InsertOperation = z.infer<typeof insertOperationSchema>
export type UpdateOperation = z.infer<typeof updateOperationSchema>
export type DeleteOperation = z.infer<typeof deleteOperationSchema>
export type Operation = z.infer<typeof operationSchema>
export type OperationAction = Operation['action']

export const batchIdSchema = idString(128)

export const syncBatchSchema = z.strictObject({
  batchId: batchIdSchema,
  operations: z.array(z.unknown()),
})
/** The envelope only: operations are validated one by one so errors can name the index. */
export type SyncBatchEnvelope = z.infer<typeof syncBatchSchema>
export type SyncBatch = { batchId: string; operations: Operation[] }

export const syncAckSchema = z.object({
  batchId: batchIdSchema,
  applied: z.number().int().min(0),
  duplicate: z.boolean().optional(),
})
export type SyncAck = z.infer<typeof syncAckSchema>
