export type {
  AuditEntryWire,
  AuditPageWire,
  AuditQuery,
  ConflictBody,
  ServiceAuditEntryWire,
  ServiceAuditPageWire,
  SyncConflict,
} from './audit.js'
export {
  AUDIT_PAGE_SIZE,
  auditEntrySchema,
  auditPageSchema,
  auditQuerySchema,
  conflictBodySchema,
  revisionSchema,
  serviceAuditEntrySchema,
  serviceAuditPageSchema,
  syncConflictSchema,
} from './audit.js'
export type { RetryPolicy } from './backoff.js'
export { computeBackoff, DEFAULT_RETRY_POLICY, parseRetryAfter, resolveRetryPolicy, retryDelay } from './backoff.js'
export { BIDI_CONTROL, withoutBidiControls } from './bidi.js'
export {
  parseConnectedData,
  parseFlag,
  parseFlagPatch,
  parseSnapshot,
  parseStreamUpdate,
} from './browser-parsers.js'
export { enableEnglishMessages } from './english-messages.js'
export type { ErrorBody, ErrorCode, Issue } from './errors.js'
export { ERROR_CODES, errorBodySchema, issueSchema } from './errors.js'
export type { Flag, FlagInput, FlagPatch, FlatOperator, Operator, TargetingRule } from './flag.js'
export {
  flagKeySchema,
  flagPatchSchema,
  flagSchema,
  flatOperatorSchema,
  LIMITS,
  operatorSchema,
  targetingRuleSchema,
} from './flag.js'
export type { FlagFieldDifference } from './flag-diff.js'
export { flagDifferences } from './flag-diff.js'
export type { PatchResult } from './flag-patch.js'
export { applyFlagPatch } from './flag-patch.js'
export { formatPath, formatZodError, toIssues } from './format-issues.js'
export type {
  EvaluableFlag,
  FlagType,
  FlagValue,
  FullFlag,
  FullTargetingRule,
  Prerequisite,
  WeightedVariant,
} from './full-flag.js'
export {
  flagTypeSchema,
  flagValueSchema,
  fullFlagSchema,
  fullTargetingRuleSchema,
  prerequisiteSchema,
  weightedVariantSchema,
} from './full-flag.js'
export type { ImpressionWire } from './impressions.js'
export { IMPRESSION_WIRE_LIMITS, impressionJson, wireContext, wireUserId, wireValue } from './impressions.js'
export { jsonEqual } from './json-equal.js'
export type { JsonValue } from './json-value.js'
export { isJsonValue } from './json-value.js'
export type {
  OfrepBulkResponse,
  OfrepConfiguration,
  OfrepContext,
  OfrepErrorCode,
  OfrepEvaluationFailure,
  OfrepEvaluationSuccess,
  OfrepEventStream,
  OfrepMetadata,
  OfrepReason,
  OfrepRefetchEvent,
  OfrepRequestFailure,
} from './ofrep.js'
export {
  OFREP_ERROR_CODES,
  OFREP_REASONS,
  ofrepBulkResponseSchema,
  ofrepConfigurationSchema,
  ofrepContextSchema,
  ofrepEvaluationFailureSchema,
  ofrepEvaluationRequestSchema,
  ofrepEvaluationSuccessSchema,
  ofrepEventStreamSchema,
  ofrepMetadataSchema,
  ofrepRefetchEventSchema,
  ofrepRequestFailureSchema,
} from './ofrep.js'
export { patchFlag } from './patch-flag.js'
export { SLUG_MAX_LENGTH, slugify } from './slug.js'
export type {
  ConnectedData,
  DeleteUpdate,
  EnvironmentOrderEvent,
  PeopleEvent,
  StreamUpdate,
  UpsertUpdate,
} from './stream.js'
export {
  connectedDataSchema,
  DASHBOARD_STREAM_EVENTS,
  deleteUpdateSchema,
  environmentOrderEventSchema,
  peopleEventSchema,
  readyDataSchema,
  STREAM_EVENTS,
  snapshotSchema,
  streamUpdateSchema,
  upsertUpdateSchema,
} from './stream.js'
export type {
  DeleteOperation,
  InsertOperation,
  Operation,
  OperationAction,
  SyncAck,
  SyncBatch,
  SyncBatchEnvelope,
  UpdateOperation,
} from './sync.js'
export {
  batchIdSchema,
  collectionNameSchema,
  deleteOperationSchema,
  insertOperationSchema,
  operationSchema,
  recordIdSchema,
  syncAckSchema,
  syncBatchSchema,
  updateOperationSchema,
} from './sync.js'
export { WEBHOOK_EVENT_TYPES, type WebhookEventType } from './webhooks.js'
