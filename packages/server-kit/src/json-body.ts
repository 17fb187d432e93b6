import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Readable } from 'node:stream'
import express, { type RequestHandler } from 'express'
import { byteLimit } from './byte-size.js'
import { HttpError } from './http-error.js'
import { jsonDepthExceeds, MAX_JSON_DEPTH } from './json-depth.js'

export interface JsonBodyOptions {
  /** Largest accepted body, bytes or a string like '1mb' (default '1mb'). */
  limit?: number | string
  /** Deepest accepted nesting of arrays and objects (default 64); deeper is a 422 before any schema runs. */
  maxDepth?: number
  /**
   * Bytes past `limit` read and thrown away after the 413 before the connection is closed (default 32 MiB), for
   * at most `drainMs` (default 30 000): see below. 0 closes at once.
   */
  drainBytes?: number
  drainMs?: number
}

/**
 * Parses JSON bodies of any JSON type (schemas decide what is valid) and
 * answers 415 for a body sent as anything but JSON, instead of ignoring it.
 *
 * The size limit is enforced here rather than by body-parser: on a body over
 * its limit body-parser reads the rest of the request before it answers, so a
 * client that never stops sending (chunked, or a Content-Length of gigabytes)
 * never got its 413. Here the 413 is decided as soon as the limit is passed, on
 * the bytes received and on the inflated bytes of a gzip/deflate/br body, and
 * sent with `Connection: close`.
 *
 * Closing a socket the client is still writing to resets it, and a client
 * that reads the answer only once it has sent its whole body (Node's fetch,
 * undici) then sees a network error (EPIPE) instead of the 413. So the 413
 * is written at once, but the connection is closed only once the rest of the
 * body has been read and discarded (unparsed), at most `drainBytes` past the
 * limit and for `drainMs` (lingering close, as nginx does): past either, it is
 * closed then, and a declared Content-Length beyond them is closed at once. A
 * zip bomb (inflated past the limit) is answered and closed at once.
 *
 * Nesting deeper than `maxDepth` is a 422: schema libraries validate
 * recursively, and a value nested thousands deep overflowed the stack (500).
 */
export function jsonBody(options: JsonBodyOptions = {}): RequestHandler[] {
  const settings: BodySettings = {
    limit: byteLimit(options.limit ?? '1mb'),
    maxDepth: options.maxDepth ?? MAX_JSON_DEPTH,
    drainBytes: options.drainBytes ?? DRAIN_BYTES,
    drainMs: options.drainMs ?? DRAIN_MS,
    parse: express.json({ limit: Number.POSITIVE_INFINITY, strict: false, type: isJsonType }),
  }
  const read: RequestHandler = (req, res, next) => readBody(req, res, next, settings)
  return [requireJson, read]
}

/** `jsonBody`'s options resolved, and the body-parser it reads with (no limit of its own: the guard enforces it). */
interface BodySettings {
  limit: number
  maxDepth: number
  drainBytes: number
  drainMs: number
  parse: RequestHandler
}

type Request = Parameters<RequestHandler>[0]
type Response = Parameters<RequestHandler>[1]
type Next = Parameters<RequestHandler>[2]
type BodyListener = Parameters<Request['off']>[1]

/** A body sent as anything but JSON is a 415, not ignored. */
const requireJson: RequestHandler = (req, _res, next) => {
  if (hasBody(req) && !isJsonType(req)) {
    next(new HttpError('unsupported_media_type', 'send the body as JSON with Content-Type: application/json'))
    return
  }
  next()
}

/** Parses the body under the limit guard: the 413 as soon as the limit is passed, the 422 when nested too deep. */
function readBody(req: Request, res: Response, next: Next, settings: BodySettings): void {
  if (!hasBody(req)) {
    settings.parse(req, res, next)
    return
  }
  const guard = limitGuard(req, res, next, settings)
  if (Number(req.headers['content-length']) > settings.limit) {
    guard.tooLarge(true)
    return
  }
  // Both listeners are attached in this synchronous call, with body-parser's own, so no chunk passes unseen.
  req.on('data', guard.countReceived)
  const before = { data: new Set(req.listeners('data')), end: new Set(req.listeners('end')) }
  // body-parser pipes a compressed body into a zlib stream it creates: count what comes out of that too.
  const pipe = req.pipe
  req.pipe = function pipeCounted<T extends NodeJS.WritableStream>(destination: T, pipeOptions?: { end?: boolean }) {
    guard.countInflatedOf(destination as unknown as Readable)
    return pipe.call(this, destination, pipeOptions) as T
  }
  try {
    settings.parse(req, res, (error?: unknown) => {
      if (error) {
        guard.finish(error)
        return
      }
      guard.finish(depthError(req, settings.maxDepth))
    })
  } finally {
    req.pipe = pipe
  }
  for (const event of ['data', 'end'] as const) {
    for (const listener of req.listeners(event)) {
      if (!before[event].has(listener)) guard.parserListeners.push([event, listener as BodyListener])
    }
  }
}

/** The 422 for a parsed body nested deeper than `maxDepth` (its body is dropped), or undefined. */
function depthError(req: Request, maxDepth: number): HttpError | undefined {
  if (!jsonDepthExceeds(req.body, maxDepth)) return undefined
  req.body = undefined
  return new HttpError('validation_failed', `JSON nested deeper than ${maxDepth} levels`, { max_depth: maxDepth })
}

/** The size limit of one request: counts received and inflated bytes, and answers 413 once either passes it. */
interface LimitGuard {
  /** Hands the outcome to `next` once; later calls are ignored. */
  finish: (error?: unknown) => void
  /** Refuses the body; `drain` lingers on the rest of it (see `lingerThenClose`) instead of closing at once. */
  tooLarge: (drain: boolean) => void
  countReceived: (chunk: Buffer) => void
  /** Counts the output of the stream body-parser inflates a compressed body into. */
  countInflatedOf: (inflater: Readable) => void
  /** The listeners body-parser attached to the request, removed when the rest of the body is only drained. */
  parserListeners: Array<['data' | 'end', BodyListener]>
}

function limitGuard(req: Request, res: Response, next: Next, settings: BodySettings): LimitGuard {
  const { limit, drainBytes, drainMs } = settings
  let settled = false
  let received = 0
  let inflated = 0
  let inflater: Readable | undefined
  let refused = false
  const parserListeners: LimitGuard['parserListeners'] = []
  const finish = (error?: unknown) => {
    if (settled) return
    settled = true
    req.off('data', countReceived)
    inflater?.off('data', countInflated)
    next(error)
  }
  const tooLarge = (drain: boolean) => {
    if (settled || refused) return
    refused = true
    req.unpipe()
    req.off('data', countReceived)
    inflater?.off('data', countInflated)
    res.setHeader('Connection', 'close')
    const error = new HttpError('payload_too_large', `request body is larger than ${limit} bytes`, {
      limit_bytes: limit,
    })
    const declared = Number(req.headers['content-length'])
    if (!drain || drainBytes <= 0 || declared > limit + drainBytes || req.complete) {
      req.pause()
      finish(error)
      return
    }
    for (const [event, listener] of parserListeners) req.off(event, listener)
    lingerThenClose(req, res, { bytes: limit + drainBytes - received, ms: drainMs })
    finish(error)
  }
  const countReceived = (chunk: Buffer) => {
    received += chunk.length
    if (received > limit) tooLarge(true)
  }
  const countInflated = (chunk: Buffer) => {
    inflated += chunk.length
    if (inflated > limit) tooLarge(false)
  }
  const countInflatedOf = (stream: Readable) => {
    inflater = stream
    inflater.on('data', countInflated)
  }
  return { finish, tooLarge, countReceived, countInflatedOf, parserListeners }
}

/**
 * Lingering close, as nginx does it: reads and throws away the rest of a
 * refused body, then lets the answer end (and, with `Connection: close`, the
 * socket close) once the body has ended, `bytes` more have been read, or `ms`
 * have passed, whichever comes first.
 */
function lingerThenClose(req: IncomingMessage, res: ServerResponse, budget: { bytes: number; ms: number }): void {
  const release = holdEnd(res)
  let left = budget.bytes
  const stop = () => {
    clearTimeout(timer)
    req.off('data', discard)
    req.off('end', stop)
    req.off('close', stop)
    req.pause()
    release()
  }
  const discard = (chunk: Buffer) => {
    left -= chunk.length
    if (left < 0) stop()
  }
  const timer = setTimeout(stop, budget.ms)
  timer.unref?.()
  req.on('data', discard)
  req.on('end', stop)
  req.on('close', stop)
  req.resume()
}

/**
 * Lets the answer be written now but ends the response only on `release()`:
 * with `Connection: close`, ending it closes the socket, and closing while the
 * client is still sending resets the connection, which can discard the answer
 * before the client has read it.
 */
function holdEnd(res: ServerResponse): () => void {
  const end = res.end
  let released = false
  let held: Array<() => void> | undefined
  res.end = function heldEnd(this: ServerResponse, ...args: unknown[]) {
    if (released) return end.apply(this, args as never)
    const callback = args.find((arg): arg is () => void => typeof arg === 'function')
    const [chunk, encoding] = args
    if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') {
      this.write(chunk as string | Buffer, (typeof encoding === 'string' ? encoding : 'utf8') as BufferEncoding)
    } else if (!this.headersSent) this.flushHeaders()
    held = callback ? [callback] : []
    return this
  } as typeof res.end
  return () => {
    if (released) return
    released = true
    res.end = end
    if (held) res.end(...(held as []))
  }
}

/**
 * How much of an over-limit body is read and thrown away after its 413, and for how long: a sync batch several
 * times the 5 MiB `/sync` limit (a 20 MB batch) still gets its 413 over a slow link; a client that never stops
 * is closed after 32 MiB or 30 s (nginx's `lingering_time`), whichever comes first.
 */
const DRAIN_BYTES = 32 * 1024 * 1024
const DRAIN_MS = 30_000

function hasBody(req: { headers: Record<string, string | string[] | undefined> }): boolean {
  return Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined
}

function isJsonType(req: { headers: Record<string, string | string[] | undefined> }): boolean {
  const type = String(req.headers['content-type'] ?? '').toLowerCase()
  return /^application\/([\w.+-]*\+)?json\b/.test(type)
}
