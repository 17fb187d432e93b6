import type { Readable } from 'node:stream'
import express, { type RequestHandler } from 'express'
import { HttpError } from './http-error.js'
import { jsonDepthExceeds, MAX_JSON_DEPTH } from './json-depth.js'

export interface JsonBodyOptions {
  /** Largest accepted body, bytes or a string like '1mb' (default '1mb'). */
  limit?: number | string
  /** Deepest accepted nesting of arrays and objects (default 64); deeper is a 422 before any schema runs. */
  maxDepth?: number
}

/**
 * Parses JSON bodies of any JSON type (schemas decide what is valid) and
 * answers 415 for a body sent as anything but JSON, instead of ignoring it.
 *
 * The size limit is enforced here rather than by body-parser: on a body over
 * its limit body-parser reads the rest of the request before it answers, so a
 * client that never stops sending (chunked, or a Content-Length of gigabytes)
 * never got its 413. Here the 413 goes out as soon as the limit is passed, on
 * the bytes received and on the inflated bytes of a gzip/deflate/br body,
 * with `Connection: close`: the request is no longer read, and Node closes the
 * socket once the answer is flushed.
 *
 * Nesting deeper than `maxDepth` is a 422: schema libraries validate
 * recursively, and a value nested thousands deep overflowed the stack (500).
 */
export function jsonBody(options: JsonBodyOptions = {}): RequestHandler[] {
  const limit = byteLimit(options.limit ?? '1mb')
  const maxDepth = options.maxDepth ?? MAX_JSON_DEPTH
  const parse = express.json({ limit: Number.POSITIVE_INFINITY, strict: false, type: isJsonType })

  const requireJson: RequestHandler = (req, _res, next) => {
    if (hasBody(req) && !isJsonType(req)) {
      next(new HttpError('unsupported_media_type', 'send the body as JSON with Content-Type: application/json'))
      return
    }
    next()
  }

  const read: RequestHandler = (req, res, next) => {
    if (!hasBody(req)) {
      parse(req, res, next)
      return
    }
    let settled = false
    let received = 0
    let inflated = 0
    let inflater: Readable | undefined
    const finish = (error?: unknown) => {
      if (settled) return
      settled = true
      req.off('data', countReceived)
      inflater?.off('data', countInflated)
      next(error)
    }
    const tooLarge = () => {
      if (settled) return
      req.unpipe()
      req.pause()
      res.setHeader('Connection', 'close')
      finish(new HttpError('payload_too_large', `request body is larger than ${limit} bytes`, { limit_bytes: limit }))
    }
    const countReceived = (chunk: Buffer) => {
      received += chunk.length
      if (received > limit) tooLarge()
    }
    const countInflated = (chunk: Buffer) => {
      inflated += chunk.length
      if (inflated > limit) tooLarge()
    }

    if (Number(req.headers['content-length']) > limit) {
      tooLarge()
      return
    }
    // Both listeners are attached in this synchronous call, with body-parser's own, so no chunk passes unseen.
    req.on('data', countReceived)
    // body-parser pipes a compressed body into a zlib stream it creates: count what comes out of that too.
    const pipe = req.pipe
    req.pipe = function pipeCounted<T extends NodeJS.WritableStream>(destination: T, pipeOptions?: { end?: boolean }) {
      inflater = destination as unknown as Readable
      inflater.on('data', countInflated)
      return pipe.call(this, destination, pipeOptions) as T
    }
    try {
      parse(req, res, (error?: unknown) => {
        if (error) {
          finish(error)
          return
        }
        if (jsonDepthExceeds(req.body, maxDepth)) {
          req.body = undefined
          finish(
            new HttpError('validation_failed', `JSON nested deeper than ${maxDepth} levels`, { max_depth: maxDepth }),
          )
          return
        }
        finish()
      })
    } finally {
      req.pipe = pipe
    }
  }
  return [requireJson, read]
}

function hasBody(req: { headers: Record<string, string | string[] | undefined> }): boolean {
  return Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined
}

function isJsonType(req: { headers: Record<string, string | string[] | undefined> }): boolean {
  const type = String(req.headers['content-type'] ?? '').toLowerCase()
  return /^application\/([\w.+-]*\+)?json\b/.test(type)
}

const UNITS: Record<string, number> = { b: 1, kb: 2 ** 10, mb: 2 ** 20, gb: 2 ** 30, tb: 2 ** 40, pb: 2 ** 50 }

/** A limit as body-parser's `bytes` reads it: a number of bytes, or '100kb', '1mb', '1.5 MB' (units of 1024). */
export function byteLimit(limit: number | string): number {
  if (typeof limit === 'number') return limit
  const match = /^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|tb|pb)?\s*$/i.exec(limit)
  if (!match) throw new TypeError(`not a byte size: ${JSON.stringify(limit)}`)
  return Math.floor(Number(match[1]) * (UNITS[(match[2] ?? 'b').toLowerCase()] ?? 1))
}
