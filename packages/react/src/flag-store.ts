import { evaluate } from '@flagsync/evaluation'
import { type ClientFlag, type FlagClient, type FlagEvaluation, isNewerFlagSet } from '@flagsync/flag-client'

export type FlagView = ReadonlyMap<string, ClientFlag>
type EvaluableFlag = Parameters<typeof evaluate>[0]

const NOT_FOUND: FlagEvaluation = { value: undefined, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND', flagFound: false }

/**
 * The bootstrap as a view: only objects with a string `key` (a server page that embedded an error body, such as
 * `{error, code}` from a 401, or a broken entry must not take the whole render down: evaluation never throws, so
 * neither does what feeds it). Anything but an array is no bootstrap, said once on the console.
 */
function bootstrapView(bootstrap: unknown): FlagView | undefined {
  if (bootstrap === undefined || bootstrap === null) return undefined
  if (!Array.isArray(bootstrap)) {
    console.warn('FlagsyncProvider: `bootstrap` must be an array of flags; ignored', bootstrap)
    return undefined
  }
  const view = new Map<string, ClientFlag>()
  for (const flag of bootstrap as unknown[]) {
    if (typeof flag === 'object' && flag !== null && typeof (flag as ClientFlag).key === 'string') {
      view.set((flag as ClientFlag).key, flag as ClientFlag)
    }
  }
  return view
}

/**
 * What the hooks read: a flag client's view when there is one, else the
 * bootstrap flags (on the server, before a provider-made client exists, and
 * while a client has no flag set of its own yet, so hydration never flashes
 * the fallbacks). A client's cached set is no newer flag set: it replaces the
 * bootstrap only with a higher revision, as in the flag client itself. Every
 * view is an immutable map, compared by identity.
 */
export class FlagStore {
  readonly client: FlagClient | undefined
  private readonly bootstrap: FlagView | undefined
  private readonly empty: FlagView = new Map()
  /** The last client view compared with the bootstrap, and whether it was newer. */
  private compared: { view: FlagView; newer: boolean } | undefined

  constructor(client: FlagClient | undefined, bootstrap: readonly ClientFlag[] | undefined) {
    this.client = client
    this.bootstrap = bootstrapView(bootstrap)
  }

  readonly subscribe = (onChange: () => void): (() => void) => {
    // Status events matter too: the first flag set of a client replaces the bootstrap view.
    return this.client ? this.client.subscribe(onChange) : () => {}
  }

  readonly getSnapshot = (): FlagView => {
    const client = this.client
    if (!client) return this.getServerSnapshot()
    const source = client.status().source
    if (this.bootstrap && (source === 'none' || (source === 'cache' && !this.newerThanBootstrap(client.snapshot())))) {
      return this.bootstrap
    }
    return client.snapshot()
  }

  private newerThanBootstrap(view: FlagView): boolean {
    if (this.compared?.view !== view) {
      this.compared = { view, newer: isNewerFlagSet(view.values(), this.bootstrap?.values() ?? []) }
    }
    return this.compared.newer
  }

  /** What the server rendered, and so what hydration must render first. */
  readonly getServerSnapshot = (): FlagView => this.bootstrap ?? this.empty

  /**
   * Evaluates a flag of the given view. The client's own view goes through the
   * client, so the evaluation counts as an impression; other views are
   * evaluated locally with the same evaluator.
   */
  evaluate(view: FlagView, key: string, context: Record<string, unknown> | undefined): FlagEvaluation {
    if (this.client && view === this.client.snapshot()) return this.client.evaluate(key, context)
    const flag = view.get(key)
    if (!flag) return NOT_FOUND
    const lookup = (k: string) => view.get(k) as EvaluableFlag | undefined
    return { ...evaluate(flag as EvaluableFlag, context ?? {}, lookup), flagFound: true }
  }
}
