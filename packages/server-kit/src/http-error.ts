import { STATUS_CODES } from 'node:http'
import { ERROR_CODES, type ErrorCode, type Issue } from '@flagsync/protocol'

/** The one table that maps error codes to HTTP statuses. */
export const STATUS_BY_CODE: Record<ErrorCode, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  range_not_satisfiable: 416,
  validation_failed: 422,
  rate_limited: 429,
  unavailable: 503,
  internal: 500,
}

export interface HttpErrorDetails {
  issues?: Issue[]
  operationIndex?: number
  /** Seconds, sent as Retry-After for 429 and 503. */
  retryAfterSeconds?: number
  [extra: string]: unknown
}

/** An error that knows its HTTP answer. `message` is shown to the client; `cause` never is. */
export class HttpError extends Error {
  override readonly name = 'HttpError'
  readonly code: ErrorCode
  readonly details: HttpErrorDetails

  constructor(code: ErrorCode, message: string, details: HttpErrorDetails = {}, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause })
    this.code = code
    this.details = details
  }

  get status(): number {
    return STATUS_BY_CODE[this.code]
  }

  toBody(): Record<string, unknown> {
    const { retryAfterSeconds: _hidden, ...rest } = this.details
    return { error: this.message, code: this.code, ...rest }
  }
}

const isErrorCode = (value: unknown): value is ErrorCode =>
  typeof value === 'string' && (ERROR_CODES as readonly string[]).includes(value)

// body-parser marks its errors with `type`; each is the client's mistake, not ours.
const BODY_PARSER_ERRORS: Record<string, [ErrorCode, string]> = {
  'entity.parse.failed': ['bad_request', 'malformed JSON body'],
  'entity.too.large': ['payload_too_large', 'request body is too large'],
  'encoding.unsupported': ['unsupported_media_type', 'unsupported content encoding'],
  'charset.unsupported': ['unsupported_media_type', 'unsupported charset'],
  'entity.verify.failed': ['bad_request', 'request body failed verification'],
  'request.aborted': ['bad_request', 'request aborted'],
  'request.size.invalid': ['bad_request', 'request size did not match content length'],
  'stream.encoding.set': ['internal', 'stream encoding misconfigured'],
}

/**
 * Normalizes anything thrown into an HttpError at the HTTP boundary. Errors
 * that carry a protocol error code (StoreError, for instance) keep it; any
 * other error becomes an opaque 500 so internals never leak.
 */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error
  if (typeof error === 'object' && error !== null) {
    const e = error as {
      type?: unknown
      code?: unknown
      message?: unknown
      retryAfterSeconds?: unknown
      expose?: unknown
    }
    const parser = typeof e.type === 'string' ? BODY_PARSER_ERRORS[e.type] : undefined
    if (parser) return new HttpError(parser[0], parser[1], {}, { cause: error })
    if (isErrorCode(e.code) && error instanceof Error) {
      const details: HttpErrorDetails = {}
      if (typeof e.retryAfterSeconds === 'number') details.retryAfterSeconds = e.retryAfterSeconds
      return new HttpError(e.code, e.code === 'internal' ? 'internal error' : error.message, details, { cause: error })
    }
    // Other http-errors-style errors with a 4xx status are client mistakes (the router's URIError for a
    // malformed %-escape in the path, for instance); their message is shown only when marked `expose`.
    const status = (error as { status?: unknown }).status
    if (typeof status === 'number' && status >= 400 && status < 500) {
      const code = codeForStatus(status)
      // Unexposed: a generic message that still agrees with the status (a 404 says "not found", not "malformed").
      const generic =
        status === 400 ? 'malformed request' : (STATUS_CODES[status]?.toLowerCase() ?? 'malformed request')
      const message = e.expose === true && typeof e.message === 'string' ? e.message : generic
      return new HttpError(code, message, {}, { cause: error })
    }
  }
  return new HttpError('internal', 'internal error', {}, { cause: error })
}

function codeForStatus(status: number): ErrorCode {
  for (const code of ERROR_CODES) if (STATUS_BY_CODE[code] === status) return code
  return 'bad_request'
}
