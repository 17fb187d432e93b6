/** Why a sync-client call failed. */
export type SyncClientErrorCode =
  /** `createSyncClient` got an option it cannot work with. */
  | 'invalid_config'
  /** The call itself is wrong (unknown action, bad payload, update after a queued delete); nothing was queued. */
  | 'invalid_operation'
  /** IndexedDB refused the write because the origin is out of storage; nothing was queued. */
  | 'quota_exceeded'
  /** The client was closed. */
  | 'closed'
  /** IndexedDB failed for another reason (blocked, unavailable, aborted transaction). */
  | 'storage_failed'
  /** `resolve()` of a conflict that is not (or no longer) there: resolved already, maybe in another tab. */
  | 'unknown_conflict'
  /** `resolve()` with a resolution that does not fit the conflict (e.g. `'recreate'` of a record that exists). */
  | 'invalid_resolution'

/**
 * The one error class the client throws. `code` is for programs, `message` for
 * people, and `cause` keeps whatever IndexedDB or the caller threw.
 */
export class SyncClientError extends Error {
  /** Always `'SyncClientError'`, so logs and `error.name` checks tell it apart after bundling. */
  override readonly name = 'SyncClientError'
  /** What failed, for programs to branch on; see `SyncClientErrorCode`. */
  readonly code: SyncClientErrorCode

  constructor(code: SyncClientErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
  }
}

/** Firefox names a full disk differently; Dexie wraps the real error in `inner`. */
const quotaNamed = (error: unknown): boolean =>
  /^(QuotaExceededError|NS_ERROR_DOM_QUOTA_REACHED)$/.test((error as { name?: string } | null)?.name as string)

/** True for a storage-quota failure, whether raw (DOMException) or wrapped by Dexie (`inner`, `failures`). */
export function isQuotaError(error: unknown): boolean {
  for (
    let current = error as { failures?: unknown; inner?: unknown; cause?: unknown }, depth = 0;
    current && depth < 5;
    depth++
  ) {
    if (quotaNamed(current) || (Array.isArray(current.failures) && current.failures.some(quotaNamed))) return true
    current = (current.inner ?? current.cause) as typeof current
  }
  return false
}

/** `${what} must be ${rule}` (`, got …` when `got` is given): the one shape of every argument and option error. */
export function mustBe(code: SyncClientErrorCode, what: string, rule: string, got?: string): SyncClientError {
  return new SyncClientError(code, `${what} must be ${rule}${got === undefined ? '' : `, got ${got}`}`)
}

/**
 * Normalizes anything thrown below the public API into a SyncClientError, so
 * callers only ever catch one class.
 */
export function toSyncClientError(error: unknown, context = 'IndexedDB operation failed'): SyncClientError {
  if (error instanceof SyncClientError) return error
  const [code, message] = isQuotaError(error)
    ? (['quota_exceeded', 'storage quota exceeded: nothing was stored (free space or deliver the outbox)'] as const)
    : (error as { name?: unknown } | null)?.name === 'DatabaseClosedError'
      ? (['closed', CLOSED] as const)
      : (['storage_failed', `${context}${error instanceof Error ? `: ${error.message}` : ''}`] as const)
  return new SyncClientError(code, message, { cause: error })
}

const CLOSED = 'the sync client is closed'

/** A call after close(), or IndexedDB closed underneath it by close(). */
export function closedError(): SyncClientError {
  return new SyncClientError('closed', CLOSED)
}
