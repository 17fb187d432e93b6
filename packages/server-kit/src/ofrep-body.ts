/**
 * Memory for bulk OFREP answer bodies, handed out again once a body's bytes
 * are written. A bulk answer is tens of kilobytes; a fresh Buffer for each
 * makes V8 count that much more external memory per request and run a full
 * garbage collection every few thousand answers, which costs a server more
 * than copying the answer does. A body is lent for one response: `release`
 * goes in `res.end`'s callback, which runs once the socket has taken every
 * byte; a response that never finishes simply keeps its memory to the GC.
 * @example
 * const bodies = new BodyPool()
 * const { body, release } = bodies.write('{"flags":[]}', true)
 * res.end(body, release)
 */
export class BodyPool {
  private readonly free: Buffer[] = []
  /** The size of the memory handed out: grows to fit the largest answer so far. */
  private size = MIN_SIZE

  /** `text`'s bytes (Latin-1 when `ascii`, the same bytes as UTF-8 then; UTF-8 otherwise) in lent memory. */
  write(text: string, ascii: boolean): { body: Buffer; release: () => void } {
    const bytes = ascii ? text.length : Buffer.byteLength(text)
    const memory = this.take(bytes)
    const written = memory.write(text, 0, bytes, ascii ? 'latin1' : 'utf8')
    let lent = true // a second call must not hand the same memory to two answers
    const release = () => {
      if (lent) this.give(memory)
      lent = false
    }
    return { body: memory.subarray(0, written), release }
  }

  private take(bytes: number): Buffer {
    if (bytes > this.size) {
      this.size = Math.max(bytes, this.size * 2)
      this.free.length = 0
    }
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.size)
  }

  private give(memory: Buffer): void {
    if (memory.length === this.size && this.free.length < KEPT) this.free.push(memory)
  }
}

/** Bodies of a few hundred flags fit; a larger answer grows the size. */
const MIN_SIZE = 64 * 1024
/** Enough for the responses a busy server has in flight at once; more are allocated and left to the GC. */
const KEPT = 64
