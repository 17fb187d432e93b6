import type { IncomingMessage, ServerResponse } from 'node:http'
import { HttpError } from './http-error.js'
import { formatSseComment, formatSseRetry } from './sse.js'

export interface SseHubOptions {
  /** Interval of keep-alive comments, ms (default 15 000; 0 disables). */
  keepAliveMs?: number
  /**
   * Bytes a connection may have queued unsent beyond its bootstrap before it
   * is dropped as a slow subscriber (default 1 MiB): server memory stays
   * bounded whoever stops reading. A bootstrap (`initial`, `writeBootstrap`)
   * is always written whole, whatever its size, and never counts: only what is
   * queued after the part of it still unsent does. The check runs before each
   * write, so a subscriber that stops reading is dropped at the first write
   * after more than this many bytes of later writes piled up behind it, or
   * at a keep-alive when it read nothing since the previous one while more
   * than this many bytes are queued, its bootstrap included.
   */
  maxBufferedBytes?: number
  /**
   * Open streams at most, all scopes together (default 10 000). Past it `open`
   * throws a 503 `unavailable` with Retry-After, before any byte is written.
   */
  maxConnections?: number
  /**
   * The `retry:` every stream starts with, ms (default 1 000; 0 sends none).
   * Each connection gets the base plus up to the base again at random, so the
   * clients of a restarted server do not all come back in the same instant.
   */
  retryMs?: number
  /** Seconds in the Retry-After of a 503 past `maxConnections` (default 5). */
  retryAfterSeconds?: number
  /** Source of the retry jitter (tests pin it). */
  random?: () => number
}

export interface SseOpenOptions {
  /** More response headers, as node:http's flat list `[name, value, name, value, …]`. */
  headers?: readonly string[]
  /**
   * The stream's first chunk (a bootstrap, as `writeBootstrap` writes it),
   * sent in one write with the headers and `retry:`: one syscall and one TCP
   * segment train per new subscriber, which is what a herd of reconnecting
   * clients costs.
   */
  initial?: string | Buffer
}

export interface SseConnection {
  readonly scope: string
  readonly res: ServerResponse
  /**
   * Writes a pre-framed chunk; returns false when the connection was dropped
   * (it already was, or more than `maxBufferedBytes` beyond its bootstrap
   * were still queued, and this write drops it).
   */
  write(chunk: string | Buffer): boolean
  /**
   * Writes part of a bootstrap: state the subscriber must receive whole before
   * anything else makes sense (its flags at connect, an environment it starts
   * to follow). Checked before writing like `write`, but its bytes never count
   * towards `maxBufferedBytes` while they wait to be sent, so a subscriber
   * that has had no chance to read is not dropped for a bootstrap larger than
   * the cap. Pass shared buffers: queued, they cost the server no copy.
   */
  writeBootstrap(chunk: string | Buffer): boolean
  close(): void
}

/** The stream's own headers, in node:http's flat form (written without building a headers object). */
const STREAM_HEADERS: readonly string[] = [
  'Content-Type',
  'text/event-stream; charset=utf-8',
  'Cache-Control',
  'no-cache, no-transform',
  'Connection',
  'keep-alive',
  'X-Accel-Buffering',
  'no', // nginx: do not buffer the stream
]

/**
 * Holds open SSE responses grouped by scope. A broadcast frame is encoded
 * once and the same buffer is written to every subscriber.
 */
export class SseHub {
  private readonly scopes = new Map<string, Set<Connection>>()
  private readonly keepAliveMs: number
  private readonly maxBufferedBytes: number
  private readonly maxConnections: number
  private readonly retryMs: number
  private readonly retryAfterSeconds: number
  private readonly random: () => number
  private openCount = 0
  private timer: ReturnType<typeof setInterval> | undefined
  private readonly keepAliveFrame = Buffer.from(formatSseComment('keep-alive'))
  private dropped = 0

  constructor(options: SseHubOptions = {}) {
    this.keepAliveMs = options.keepAliveMs ?? 15_000
    this.maxBufferedBytes = options.maxBufferedBytes ?? 1024 * 1024
    this.maxConnections = options.maxConnections ?? 10_000
    this.retryMs = options.retryMs ?? 1000
    this.retryAfterSeconds = options.retryAfterSeconds ?? 5
    this.random = options.random ?? Math.random
    if (this.keepAliveMs > 0) {
      this.timer = setInterval(() => this.keepAlive(), this.keepAliveMs)
      this.timer.unref?.()
    }
  }

  /** Open connections, in all scopes or one. */
  size(scope?: string): number {
    if (scope !== undefined) return this.scopes.get(scope)?.size ?? 0
    return this.openCount
  }

  /** Whether `open` would refuse a new stream now. */
  get full(): boolean {
    return this.openCount >= this.maxConnections
  }

  /** Subscribers dropped for not reading (for metrics and tests). */
  get droppedCount(): number {
    return this.dropped
  }

  /**
   * Starts an event stream on `res` and registers it; it unregisters itself
   * when the client goes. The count is checked and taken in this one
   * synchronous step, so parallel requests cannot overshoot the cap. A HEAD
   * request gets the stream's headers and an ended response (the returned
   * connection is already closed); it is never registered or counted.
   * @throws HttpError `unavailable` (503, Retry-After) past `maxConnections`.
   */
  open(req: IncomingMessage, res: ServerResponse, scope = '', options: SseOpenOptions = {}): SseConnection {
    if (this.full) {
      throw new HttpError('unavailable', `too many open streams (at most ${this.maxConnections}); retry later`, {
        retryAfterSeconds: this.retryAfterSeconds,
      })
    }
    const headers = options.headers ? [...STREAM_HEADERS, ...options.headers] : STREAM_HEADERS
    if (req.method === 'HEAD') {
      // The headers a GET would get, then done: a HEAD has no body, so held open it would never
      // answer and would sit on a slot of the cap. It is not registered and never counts.
      res.writeHead(200, headers as string[])
      res.end()
      return new Connection(scope, res, this.maxBufferedBytes, () => {})
    }
    res.writeHead(200, headers as string[])
    req.socket.setNoDelay(true)
    req.socket.setKeepAlive(true)
    const conn = new Connection(scope, res, this.maxBufferedBytes, () => this.onDrop())
    let set = this.scopes.get(scope)
    if (!set) {
      set = new Set()
      this.scopes.set(scope, set)
    }
    set.add(conn)
    this.openCount++
    const remove = () => {
      const current = this.scopes.get(scope)
      if (current?.delete(conn)) this.openCount--
      if (current?.size === 0) this.scopes.delete(scope)
    }
    res.on('close', remove)
    const retry = this.retryMs > 0 ? formatSseRetry(this.retryMs + Math.floor(this.random() * this.retryMs)) : ''
    if (options.initial !== undefined) {
      // Corked: headers, retry: and the first chunk leave in one writev.
      res.cork()
      if (retry) res.write(retry)
      conn.writeBootstrap(options.initial)
      res.uncork()
    } else {
      // Nothing to send yet: the headers go now, so the client sees the stream open.
      if (retry) res.write(retry)
      else res.flushHeaders()
    }
    return conn
  }

  /** Sends one frame to every subscriber of a scope. */
  broadcast(frame: string | Buffer, scope = ''): void {
    const set = this.scopes.get(scope)
    if (!set) return
    const bytes = typeof frame === 'string' ? Buffer.from(frame) : frame
    for (const conn of set) conn.write(bytes)
  }

  broadcastAll(frame: string | Buffer): void {
    const bytes = typeof frame === 'string' ? Buffer.from(frame) : frame
    for (const set of this.scopes.values()) for (const conn of set) conn.write(bytes)
  }

  /** Ends every stream (clients reconnect and rebuild); used on shutdown and after a reset. */
  closeAll(): void {
    for (const set of this.scopes.values()) for (const conn of set) conn.close()
    this.scopes.clear()
    this.openCount = 0
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.closeAll()
  }

  /** The keep-alive comment to every stream, and the end of those that read nothing since the last one (`Connection.tick`). */
  private keepAlive(): void {
    for (const set of this.scopes.values()) for (const conn of set) conn.tick(this.keepAliveFrame)
  }

  private onDrop(): void {
    this.dropped++
  }
}

class Connection implements SseConnection {
  readonly scope: string
  readonly res: ServerResponse
  private readonly maxBufferedBytes: number
  private readonly onDrop: () => void
  /** Payload bytes handed to `res.write` so far (headers and chunk framing not counted). */
  private written = 0
  /** Bootstrap chunks that may still be queued, as [start, end) offsets in `written`, oldest first. */
  private readonly bootstrap: Array<{ start: number; end: number }> = []
  /** What had been sent at the previous keep-alive tick. */
  private sentAtTick = Number.NEGATIVE_INFINITY

  constructor(scope: string, res: ServerResponse, maxBufferedBytes: number, onDrop: () => void) {
    this.scope = scope
    this.res = res
    this.maxBufferedBytes = maxBufferedBytes
    this.onDrop = onDrop
  }

  write(chunk: string | Buffer): boolean {
    return this.send(chunk, false)
  }

  writeBootstrap(chunk: string | Buffer): boolean {
    return this.send(chunk, true)
  }

  close(): void {
    if (!this.res.writableEnded) this.res.end()
  }

  /**
   * A keep-alive tick. A subscriber that read nothing for a whole interval
   * while more than the cap is queued, its bootstrap included, has stopped
   * reading: it is dropped, so one that never reads a large bootstrap does not
   * hold it when no change comes to pile up behind it. Otherwise the comment
   * is written like any frame.
   */
  tick(frame: Buffer): void {
    if (this.res.destroyed || this.res.writableEnded) return
    const sent = this.written - this.res.writableLength
    const stalled = sent <= this.sentAtTick && this.res.writableLength > this.maxBufferedBytes
    this.sentAtTick = sent
    if (stalled) this.drop()
    else this.write(frame)
  }

  private send(chunk: string | Buffer, bootstrap: boolean): boolean {
    if (this.res.destroyed || this.res.writableEnded) return false
    if (this.backlog() > this.maxBufferedBytes) {
      this.drop()
      return false
    }
    const length = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length
    if (bootstrap && length > 0) this.bootstrap.push({ start: this.written, end: this.written + length })
    this.written += length
    this.res.write(chunk)
    return true
  }

  private drop(): void {
    this.onDrop()
    this.res.destroy()
  }

  /**
   * Bytes queued unsent beyond the bootstrap chunks still queued: what piles
   * up for a reader that stopped reading. The socket sends in order, so the
   * first `written - writableLength` payload bytes have left. Headers and
   * chunk framing sit in `writableLength` but not in `written`, so the
   * estimate errs towards counting a bootstrap byte as still queued: a
   * subscriber is never dropped for its own bootstrap.
   */
  private backlog(): number {
    const queued = this.res.writableLength
    const sent = this.written - queued
    while (this.bootstrap.length > 0 && (this.bootstrap[0]?.end ?? 0) <= sent) this.bootstrap.shift()
    let bootstrapQueued = 0
    for (const range of this.bootstrap) bootstrapQueued += range.end - Math.max(range.start, sent)
    return queued - bootstrapQueued
  }
}
