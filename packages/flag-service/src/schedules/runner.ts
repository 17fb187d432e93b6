import type { ServiceRuntime } from '../service-runtime.js'
import { claimAndApply } from './claim.js'
import { batchesOf, type DueSchedule, dueSchedules, nextRunAt } from './due.js'

/** The default poll for schedules created, approved or cancelled through other instances: 1 s. */
const DEFAULT_SCHEDULE_POLL_MS = 1000

export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

export interface ScheduleRunnerOptions {
  /** The longest the runner sleeps between looks at the table (SCHEDULE_POLL_MS, default 1 000). */
  pollMs?: number
  /** Injected timers (tests); the global ones by default. Time itself is `runtime.clock`. */
  timers?: Timers
  /** Where in the due batches a look starts, from a number in [0, 1) (tests fix it); `Math.random` by default. */
  random?: () => number
}

const globalTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
}

/** Due schedules read per look at the table; the next look follows at once while there are more. */
const READ = 500

/**
 * Applies due schedules of every environment, exactly once across instances (see `claimAndApply`). It sleeps until
 * the next due `run_at`, at most `pollMs` (what other instances created meanwhile is seen then); this instance's
 * creates, approvals and cancels `nudge` it at once.
 */
export class ScheduleRunner {
  private readonly pollMs: number
  private readonly timers: Timers
  private readonly random: () => number
  private timer: unknown
  private running: Promise<void> | undefined
  private again = false
  /** A batch of the last look failed: the next look waits for the poll rather than retry at once. */
  private failed = false
  private closed = false

  constructor(
    private readonly runtime: ServiceRuntime,
    options: ScheduleRunnerOptions = {},
  ) {
    this.pollMs = options.pollMs ?? DEFAULT_SCHEDULE_POLL_MS
    this.timers = options.timers ?? globalTimers
    this.random = options.random ?? Math.random
  }

  /** Looks at the table now (or right after the look under way). */
  nudge(): void {
    if (this.closed) return
    if (this.running) {
      this.again = true
      return
    }
    this.arm(0)
  }

  async close(): Promise<void> {
    this.closed = true
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer)
    await this.running
  }

  private arm(ms: number): void {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer)
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined
      this.running = this.run().finally(() => {
        this.running = undefined
      })
    }, ms)
  }

  private async run(): Promise<void> {
    let delay = this.pollMs
    this.failed = false
    try {
      await this.drain()
      const next = await nextRunAt(this.runtime.knex)
      if (next !== undefined && !this.failed) delay = Math.min(this.pollMs, Math.max(0, next - this.runtime.clock()))
    } catch (err) {
      this.runtime.logger.warn({ err }, 'schedules: applying due schedules failed; retrying at the next poll')
    }
    if (this.closed) return
    if (this.again) {
      this.again = false
      delay = 0
    }
    this.arm(delay)
  }

  /** Applies what is due now, batch after batch. Another instance may take some first: those are skipped. */
  private async drain(): Promise<void> {
    for (;;) {
      const due = await dueSchedules(this.runtime.knex, this.runtime.clock(), READ)
      if (due.length === 0) return
      const batches = batchesOf(due)
      // Instances reading the same schedules start at different batches, so they rarely wait for the same rows.
      const start = Math.floor(this.random() * batches.length)
      let settled = 0
      for (let i = 0; i < batches.length && !this.closed; i++) {
        settled += await this.apply(batches[(start + i) % batches.length] ?? [])
      }
      if (this.closed || due.length < READ || settled === 0) return
    }
  }

  /** One batch; a batch that fails (the database busy, say) stays pending for the next look, and the rest go on. */
  private async apply(batch: readonly DueSchedule[]): Promise<number> {
    try {
      return await claimAndApply(this.runtime, batch)
    } catch (err) {
      const ids = batch.map((s) => s.id)
      this.runtime.logger.warn({ err, ids }, 'schedules: a batch failed; it is retried at the next poll')
      this.failed = true
      return 0
    }
  }
}
