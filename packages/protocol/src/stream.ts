import * as z from 'zod/mini'
import { fullFlagSchema } from './full-flag.js'

/**
 * SSE event names used on /stream. `resumed` opens a stream that continues from the client's `Last-Event-ID`
 * (only the updates it missed follow) where `connected` opens a full bootstrap.
 */
export const STREAM_EVENTS = { connected: 'connected', resumed: 'resumed', update: 'update', ready: 'ready' } as const

/** The flat API sends `true`; the flag service sends the environment the key is bound to. */
export const connectedDataSchema = z.union([z.literal(true), z.object({ environment_id: z.nullable(z.string()) })])
/** The data of the `connected` event (see {@link connectedDataSchema}). */
export type ConnectedData = z.infer<typeof connectedDataSchema>

// Flags on the wire are validated leniently by clients: a newer server may add
// fields, and an SDK must not drop a flag because of one.
const streamFlagSchema = z.looseObject(fullFlagSchema.shape)

/** An `update` event that adds or replaces a flag. */
export const upsertUpdateSchema = z.object({
  type: z.literal('UPSERT'),
  flag: streamFlagSchema,
  env_id: z.optional(z.string()),
})
/** An `update` event that removes a flag. */
export const deleteUpdateSchema = z.object({
  type: z.literal('DELETE'),
  key: z.string(),
  env_id: z.optional(z.string()),
})
/** The data of an `update` event: an upsert or a delete. */
export const streamUpdateSchema = z.discriminatedUnion('type', [upsertUpdateSchema, deleteUpdateSchema])
/** An upsert `update` event (see {@link upsertUpdateSchema}). */
export type UpsertUpdate = z.infer<typeof upsertUpdateSchema>
/** A delete `update` event (see {@link deleteUpdateSchema}). */
export type DeleteUpdate = z.infer<typeof deleteUpdateSchema>
/** The data of an `update` event (see {@link streamUpdateSchema}). */
export type StreamUpdate = z.infer<typeof streamUpdateSchema>

/** The flag service sends the count as a JSON string ("3"); a number is accepted too. */
export const readyDataSchema = z.union([
  z.pipe(z.string().check(z.regex(/^\d+$/)), z.transform(Number)),
  z.number().check(z.int(), z.gte(0)),
])

/** The body of a snapshot (`GET /api/flags` or `/sdk/flags`): flags validated leniently, as on the stream. */
export const snapshotSchema = z.array(streamFlagSchema)

/**
 * Events only dashboard (session or token) connections of the flag service's `/stream` receive, beside the flag
 * events: `environments` says a project's environments were reordered, in their new order; `people` says a
 * user's role, name or password changed.
 */
export const DASHBOARD_STREAM_EVENTS = { environments: 'environments', people: 'people' } as const

/** The data of an `environments` event: every environment id of the project, in list order. */
export const environmentOrderEventSchema = z.object({
  project_id: z.string(),
  environment_ids: z.array(z.string()),
})
/** The data of an `environments` event (see {@link environmentOrderEventSchema}). */
export type EnvironmentOrderEvent = z.infer<typeof environmentOrderEventSchema>

/**
 * The data of a `people` event: whose role, name or password changed, and how (the people audit's action:
 * `user.updated`, `user.password_reset`, `user.password_changed`). Every dashboard connection receives it.
 */
export const peopleEventSchema = z.object({ user_id: z.number(), action: z.string() })
/** The data of a `people` event (see {@link peopleEventSchema}). */
export type PeopleEvent = z.infer<typeof peopleEventSchema>
