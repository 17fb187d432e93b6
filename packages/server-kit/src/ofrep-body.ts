/**
 * Memory for bulk OFREP answer bodies, handed out again once a body's bytes
 * are written. A bulk answer is tens of kilobytes; a fresh Buffer for each
 * makes V8 count that much more external memory per request, which brings on
 * more and fuller garbage collections (measured: 10–20 µs per answer more than
 * writing the same bytes into reused memory). A body is lent for one response: `release`
 * goes in `res.end`'s callback, which runs once the socket has taken every
 * byte; a response that never finishes simply keeps its memory to the GC.
 * @example
 * const bodies = new BodyPool()
 * const { body, release } = bodies.fill((memory) => memory.write('{"flags":[]}'))
 * res.end(body, release)
 */
export class BodyPool {
  private readonly free: Buffer[] = []
  /** The size of the memory handed out: doubles whenever an answer does not fit. */
  private size = MIN_SIZE

  /**
   * Lent memory filled by `write`, which returns the length it wrote, or -1 when the memory was too small
   * (it is then called again with larger memory).
   */
  fill(write: (memory: Buffer) => number): { body: Buffer; release: () => void } {
    for (;;) {
      const memory = this.free.pop() ?? Buffer.allocUnsafeSlow(this.size)
      const length = write(memory)
      if (length >= 0) return { body: memory.subarray(0, length), release: this.returner(memory) }
      if (memory.length === this.size) {
        this.size *= 2
        this.free.length = 0
      }
    }
  }

  /** Gives `memory` back once, however often it is called: twice would lend it to two answers. */
  private returner(memory: Buffer): () => void {
    let lent = true
    return () => {
      if (lent && memory.length === this.size && this.free.length < KEPT) this.free.push(memory)
      lent = false
    }
  }
}

/** Bodies of a few hundred flags fit; a larger answer grows the size. */
const MIN_SIZE = 64 * 1024
/** Enough for the responses a busy server has in flight at once; more are allocated and left to the GC. */
const KEPT = 64
