export type { AuditPageQuery } from './audit-query.js'
export { auditQueryOf } from './audit-query.js'
export { baseRevisionOf } from './base-revision.js'
export type { BearerAuthOptions, QueryKeyOptions } from './bearer-auth.js'
export { bearerAuth, bearerToken, keyFromQuery, presentedToken, secretsEqual, secretsMatcher } from './bearer-auth.js'
export type { Env } from './config-env.js'
export { ConfigError, envByteSize, envInt } from './config-env.js'
/** @public `ACTOR_HEADER` is in the README: the header a client declares its actor in. */
export { ACTOR_HEADER, declaredActor } from './declared-actor.js'
export { errorHandler, notFound } from './error-handler.js'
export type { HttpErrorDetails } from './http-error.js'
export { HttpError, STATUS_BY_CODE, toHttpError } from './http-error.js'
export { ifNoneMatchHits } from './if-none-match.js'
export type { JsonBodyOptions } from './json-body.js'
export { jsonBody } from './json-body.js'
export { jsonDepthExceeds, MAX_JSON_DEPTH } from './json-depth.js'
export type { ListenOptions, RunningServer } from './listen.js'
export { listen } from './listen.js'
export type { Logger, LoggerOptions } from './logger.js'
export { cliLogger, createLogger, LOG_LEVELS, logLevelFromEnv, silentLogger } from './logger.js'
export { methodNotAllowed } from './method-not-allowed.js'
export type { OfrepWatch } from './ofrep-refresh.js'
export type { OfrepBulkAnswer, OfrepBulkAnswerer, OfrepRouter, OfrepRouterOptions, OfrepScope } from './ofrep-router.js'
export { createOfrepRouter, eventsUrl } from './ofrep-router.js'
export {
  API_SECURITY_HEADERS,
  API_SECURITY_HEADERS_FLAT,
  apiSecurityHeaders,
  corsAllowList,
  pageSecurityHeaders,
  parseOrigins,
} from './security.js'
export type { SseEvent } from './sse.js'
export { formatSseComment, formatSseEvent, formatSseRetry, parseLastEventId } from './sse.js'
export { CredentialStreams } from './sse-credentials.js'
export type { SseConnection, SseHubOptions, SseOpenOptions } from './sse-hub.js'
export { SseHub } from './sse-hub.js'
export type { Chunks, StreamScope } from './sse-stream.js'
export { openBootstrapStream, openStream, resumedFrame } from './sse-stream.js'
export { stopOnSignals } from './stop-on-signals.js'
export { parseOr422 } from './validate.js'
