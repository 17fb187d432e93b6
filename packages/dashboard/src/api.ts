/**
 * The service's REST API as the dashboard calls it: same origin, the session
 * cookie, and the CSRF header the flag service asks of every state change made
 * with that cookie. Errors keep the service's JSON body (`attempts_remaining`,
 * `retry_after_seconds`, `issues`) so the UI can say what went wrong.
 */
export const CSRF_HEADER = 'X-Service-Request'

export interface ErrorBody {
  error: string
  code?: string
  issues?: Array<{ path: string; message: string }>
  attempts_remaining?: number
  retry_after_seconds?: number
  [field: string]: unknown
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    super(body.error || `HTTP ${status}`)
    this.name = 'ApiError'
  }
  /** No answer at all: the network is down or the service unreachable. */
  get offline(): boolean {
    return this.status === 0
  }
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

export async function api<T>(
  method: Method,
  path: string,
  body?: unknown,
  extraHeaders: Record<string, string> = {},
): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json', ...extraHeaders }
  if (method !== 'GET') headers[CSRF_HEADER] = 'true'
  if (body !== undefined) headers['Content-Type'] = 'application/json'
  let res: Response
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  } catch {
    throw new ApiError(0, { error: 'the service cannot be reached (offline?)', code: 'offline' })
  }
  if (res.status === 204) return undefined as T
  const text = await res.text()
  let parsed: unknown
  try {
    parsed = text === '' ? undefined : JSON.parse(text)
  } catch {
    parsed = { error: text.slice(0, 200) }
  }
  if (!res.ok) {
    const errorBody =
      parsed && typeof parsed === 'object' && 'error' in parsed
        ? (parsed as ErrorBody)
        : { error: `HTTP ${res.status}` }
    throw new ApiError(res.status, errorBody)
  }
  return parsed as T
}

/** A one-line message for an error: the service's own words, plus the fields its 422 names. */
export function errorText(error: unknown): string {
  if (error instanceof ApiError) {
    // The message usually names the first issue already: list only the ones it does not.
    const issues = error.body.issues
      ?.map((i) => `${i.path}: ${i.message}`)
      .filter((text) => !error.message.includes(text))
      .join('; ')
    return issues ? `${error.message} (${issues})` : error.message
  }
  return error instanceof Error ? error.message : String(error)
}
