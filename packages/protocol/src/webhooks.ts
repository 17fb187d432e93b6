/**
 * Every event an outbound webhook of the flag service can subscribe to; `*` subscribes to all of them, also to
 * types added later. The service validates subscriptions against it and the dashboard offers it.
 */
export const WEBHOOK_EVENT_TYPES = [
  'flag.created',
  'flag.updated',
  'flag.deleted',
  'segment.updated',
  'change_request.created',
  'change_request.approved',
  'change_request.rejected',
  'change_request.cancelled',
  'schedule.applied',
  'schedule.failed',
] as const

/** One of {@link WEBHOOK_EVENT_TYPES}. */
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number]
