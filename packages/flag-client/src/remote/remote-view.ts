import type { ClientFlag, FlagClientListener, FlagClientStatus, FlagEvaluation, FlagSource } from '../types.js'

const NOT_FOUND: FlagEvaluation = { value: undefined, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND', flagFound: false }

/**
 * What a remote client serves now: the values of its context as one immutable map (the same object until a value
 * changes), its status, its listeners and its readiness.
 */
export class RemoteView {
  flags: ReadonlyMap<string, ClientFlag> = new Map()
  status: FlagClientStatus
  readonly listeners = new Set<FlagClientListener>()
  readonly ready: Promise<void>
  #resolveReady!: () => void

  constructor(environmentId: string | null) {
    this.status = { state: 'connecting', source: 'none', environmentId, failures: 0, lastError: null }
    this.ready = new Promise((resolve) => {
      this.#resolveReady = resolve
    })
  }

  emit(event: Parameters<FlagClientListener>[0]): void {
    for (const listener of this.listeners) listener(event)
  }

  setStatus(patch: Partial<FlagClientStatus>): void {
    this.status = { ...this.status, ...patch }
    this.emit({ type: 'status', status: this.status })
  }

  /** Serves `flags`; listeners hear which keys now read differently. */
  use(flags: ClientFlag[], source: FlagSource): void {
    const next = new Map(flags.map((f) => [f.key, f]))
    const keys = new Set([...this.flags.keys(), ...next.keys()])
    const changedKeys = [...keys].filter((k) => JSON.stringify(this.flags.get(k)) !== JSON.stringify(next.get(k)))
    if (changedKeys.length > 0) {
      this.flags = next
      this.emit({ type: 'flags', changedKeys })
    }
    if (this.status.source !== source) this.setStatus({ source })
    this.#resolveReady()
  }

  /** The server's evaluation of `key` for the client's context, or FLAG_NOT_FOUND. */
  result(key: string): FlagEvaluation {
    const flag = this.flags.get(key)
    if (!flag) return NOT_FOUND
    if (typeof flag.errorCode === 'string') {
      const errorCode = flag.errorCode as FlagEvaluation['errorCode']
      return { value: undefined, reason: 'ERROR', errorCode, flagFound: true }
    }
    // OFREP's STATIC and UNKNOWN read as DEFAULT: the value no rule or split chose.
    const reason = (
      flag.reason === 'STATIC' || flag.reason === 'UNKNOWN' ? 'DEFAULT' : flag.reason
    ) as FlagEvaluation['reason']
    const result: FlagEvaluation = { value: flag.value as FlagEvaluation['value'], reason, flagFound: true }
    if (typeof flag.variant === 'string') result.variant = flag.variant
    return result
  }

  allFlags(): ClientFlag[] {
    return [...this.flags.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  }
}
