import { parseRetryAfter } from '@flagsync/protocol'
import type { BatchRow } from './outbox-schema.js'
import type { ResolvedOptions } from './resolve-options.js'
import type { DeliveryError } from './types.js'

/** What one HTTP attempt came to. */
export type DeliveryOutcome =
  /** 2xx: the receiver applied the batch (or had applied it before). */
  | { kind: 'ok'; status: number; body: unknown }
  /** 408, 429, 5xx or any other non-2xx that is not a plain 4xx: try again later. */
  | { kind: 'transient'; status: number; retryAfterMs: number | null; body: unknown }
  /** Any other 4xx: the receiver refused the batch and did not apply it. */
  | { kind: 'rejected'; status: number; retryAfterMs: number | null; body: unknown }
  /** No response: offline, DNS, CORS, reset, timeout, or aborted by `close()`. */
  | { kind: 'network'; error: unknown; timedOut: boolean; aborted: boolean }

/** The options `deliver` reads (every client option resolved). */
export type DeliverOptions = Pick<ResolvedOptions, 'clock' | 'fetch' | 'requestTimeoutMs' | 'webhookUrl'>

const MAX_BODY_CHARS = 16_384

/**
 * Sends one batch as `{batchId, operations}` JSON (the operations' text reused when the batch keeps it) and
 * classifies the answer. Never throws. `signal` aborts the request (the client's `close()`).
 */
export async function deliver(
  o: DeliverOptions,
  batch: Pick<BatchRow, 'batchId' | 'operations' | 'operationsJson'>,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<DeliveryOutcome> {
  const { clock, requestTimeoutMs } = o
  const controller = new AbortController()
  let timedOut = false
  // Settles when the request is aborted, even if a fetch implementation ignores its signal.
  let stop: (reason: Error) => void = () => {}
  const stopped = new Promise<never>((_, reject) => {
    stop = reject
  })
  const abort = (reason: string): void => {
    controller.abort()
    stop(new Error(reason))
  }
  const timer = clock.setTimeout(() => {
    timedOut = true
    abort(`no response within ${requestTimeoutMs} ms`)
  }, requestTimeoutMs)
  const onAbort = (): void => abort('aborted')
  signal.addEventListener('abort', onAbort)
  try {
    // Aborted by `close()`: not an answer, and not recorded as a failure (see `recordFailure`).
    if (signal.aborted) throw new Error('aborted')
    const exchange = async (): Promise<{ response: Response; body: unknown }> => {
      const response = await o.fetch(o.webhookUrl, {
        method: 'POST',
        // The configured headers plus `Content-Type: application/json`, which always wins.
        headers: {
          ...Object.fromEntries(Object.entries(headers).filter(([name]) => !/^content-type$/i.test(name))),
          'Content-Type': 'application/json',
        },
        body: `{"batchId":${JSON.stringify(batch.batchId)},"operations":${batch.operationsJson ?? JSON.stringify(batch.operations)}}`,
        signal: controller.signal,
      })
      return { response, body: await readBody(response) }
    }
    const { response, body } = await Promise.race([exchange(), stopped])
    const status = response.status
    if (status >= 200 && status < 300) return { kind: 'ok', status, body }
    return {
      kind: status >= 400 && status < 500 && status !== 408 && status !== 429 ? 'rejected' : 'transient',
      status,
      retryAfterMs: parseRetryAfter(response.headers.get('retry-after'), clock.now()),
      body,
    }
  } catch (error) {
    return { kind: 'network', error, timedOut, aborted: !timedOut && signal.aborted }
  } finally {
    clock.clearTimeout(timer)
    signal.removeEventListener('abort', onAbort)
  }
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text()
  if (text === '') return undefined
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text.length > MAX_BODY_CHARS ? `${text.slice(0, MAX_BODY_CHARS)}…` : text
  }
}

/** Turns a failed outcome into the error the status reports. */
export function toDeliveryError(
  outcome: Exclude<DeliveryOutcome, { kind: 'ok' }>,
  batchId: string,
  now: number,
  timeoutMs: number,
): DeliveryError {
  if (outcome.kind === 'network') {
    const { error, timedOut } = outcome
    return {
      kind: 'network',
      code: timedOut ? 'timeout' : 'network',
      message: timedOut
        ? `no response within ${timeoutMs} ms`
        : `network error: ${error instanceof Error ? error.message : String(error)}`,
      batchId,
      at: now,
    }
  }
  const body = outcome.body
  const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {}
  const error: DeliveryError = {
    kind: outcome.kind,
    status: outcome.status,
    code: typeof fields.code === 'string' ? fields.code : `http_${outcome.status}`,
    message:
      typeof fields.error === 'string'
        ? fields.error
        : typeof body === 'string' && body !== ''
          ? body.slice(0, 500)
          : `HTTP ${outcome.status}`,
    batchId,
    at: now,
  }
  if (body !== undefined) error.body = body
  if (Number.isInteger(fields.operationIndex)) error.operationIndex = fields.operationIndex as number
  return error
}
