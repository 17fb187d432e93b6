import { z } from 'zod'
import { fullFlagSchema } from './full-flag.js'

/** SSE event names used on /stream. */
export const STREAM_EVENTS = { connected: 'connected', update: 'update', ready: 'ready' } as const

/** Document 2 sends `true`; document 1 sends the environment the key is bound to. */
export const connectedDataSchema = z.union([z.literal(true), z.object({ environment_id: z.string().nullable() })])
export type ConnectedData = z.infer<typeof connectedDataSchema>

// Flags on the wire are validated leniently by clients: a newer server may add
// fields, and an SDK must not drop a flag because of one.
const streamFlagSchema = fullFlagSchema.loose()

export const upsertUpdateSchema = z.object({
  type: z.literal('UPSERT'),
  flag: streamFlagSchema,
  env_id: z.string().optional(),
})
export const deleteUpdateSchema = z.object({
  type: z.literal('DELETE'),
  key: z.string(),
  env_id: z.string().optional(),
})
export const streamUpdateSchema = z.discriminatedUnion('type', [upsertUpdateSchema, deleteUpdateSchema])
export type UpsertUpdate = z.infer<typeof upsertUpdateSchema>
export type DeleteUpdate = z.infer<typeof deleteUpdateSchema>
export type StreamUpdate = z.infer<typeof streamUpdateSchema>

/** Document 1 sends the count as a JSON string ("3"); a number is accepted too. */
export const readyDataSchema = z.union([z.string().regex(/^\d+$/).transform(Number), z.number().int().min(0)])

export const snapshotSchema = z.array(streamFlagSchema)
