import type { IncomingMessage, ServerResponse } from 'node:http'
import { formatSseComment } from './sse.js'

export interface SseHubOptions {
  /** Interval of keep-alive comments, ms (default 15 000; 0 disables). */
  keepAliveMs?: number
  /**
   * Bytes a connection may have queued unsent before it is dropped as a slow
   * subscriber (default 1 MiB): server memory stays bounded whoever stops reading.
   */
  maxBufferedBytes?: number
}

export interface SseConnection {
  readonly scope: string
  readonly res: ServerResponse
  /** Writes a pre-framed chunk; returns false when the connection was dropped. */
  write(chunk: string | Buffer): boolean
  close(): void
}

/**
 * Holds open SSE responses grouped by scope. A broadcast frame is encoded
 * once and the same buffer is written to every subscriber.
 */
export class SseHub {
  private readonly scopes = new Map<string, Set<Connection>>()
  private readonly keepAliveMs: number
  private readonly maxBufferedBytes: number
  private timer: ReturnType<typeof setInterval> | undefined
  private readonly keepAliveFrame = Buffer.from(formatSseComment('keep-alive'))
  private dropped = 0

  constructor(options: SseHubOptions = {}) {
    this.keepAliveMs = options.keepAliveMs ?? 15_000
    this.maxBufferedBytes = options.maxBufferedBytes ?? 1024 * 1024
    if (this.keepAliveMs > 0) {
      this.timer = setInterval(() => this.broadcastAll(this.keepAliveFrame), this.keepAliveMs)
      this.timer.unref?.()
    }
  }

  /** Open connections, in all scopes or one. */
  size(scope?: string): number {
    if (scope !== undefined) return this.scopes.get(scope)?.size ?? 0
    let n = 0
    for (const set of this.scopes.values()) n += set.size
    return n
  }

  /** Subscribers dropped for not reading (for metrics and tests). */
  get droppedCount(): number {
    return this.dropped
  }

  /** Starts an event stream on `res` and registers it; it unregisters itself when the client goes. */
  open(req: IncomingMessage, res: ServerResponse, scope = ''): SseConnection {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no', // nginx: do not buffer the stream
    })
    res.flushHeaders()
    req.socket.setNoDelay(true)
    req.socket.setKeepAlive(true)
    const conn = new Connection(scope, res, this.maxBufferedBytes, () => this.onDrop())
    let set = this.scopes.get(scope)
    if (!set) {
      set = new Set()
      this.scopes.set(scope, set)
    }
    set.add(conn)
    const remove = () => {
      const current = this.scopes.get(scope)
      current?.delete(conn)
      if (current?.size === 0) this.scopes.delete(scope)
    }
    res.on('close', remove)
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
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.closeAll()
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

  constructor(scope: string, res: ServerResponse, maxBufferedBytes: number, onDrop: () => void) {
    this.scope = scope
    this.res = res
    this.maxBufferedBytes = maxBufferedBytes
    this.onDrop = onDrop
  }

  write(chunk: string | Buffer): boolean {
    if (this.res.destroyed || this.res.writableEnded) return false
    if (this.res.writableLength > this.maxBufferedBytes) {
      this.onDrop()
      this.res.destroy()
      return false
    }
    this.res.write(chunk)
    return true
  }

  close(): void {
    if (!this.res.writableEnded) this.res.end()
  }
}
