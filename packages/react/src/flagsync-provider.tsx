import { type ClientFlag, createFlagClient, type FlagClient, type FlagClientOptions } from '@flagsync/flag-client'
import { type ReactNode, useEffect, useMemo, useRef, useState } from 'react'
import { FlagsyncContext } from './context.js'
import { FlagStore } from './flag-store.js'
import type { SyncClientLike } from './sync-types.js'

/** Props of `FlagsyncProvider`: give a `client`, or a `url` (and `sdkKey`) for the provider to create one. */
export interface FlagsyncProviderProps {
  /** The tree whose hooks read these flags. */
  children?: ReactNode
  /** A flag client you created and own (the provider never closes it). Wins over `url`. */
  client?: FlagClient
  /**
   * Absolute URL of the server's `/stream`: the provider creates a flag client
   * after mounting (never on the server) and closes it on unmount. A change of
   * `url`, `sdkKey` or `syncClient` replaces the client.
   */
  url?: string
  /** The SDK key of the client the provider creates. */
  sdkKey?: string
  /** Further options of the client the provider creates; read when it is created. */
  options?: Omit<FlagClientOptions, 'streamUrl' | 'sdkKey'>
  /**
   * A sync client: `useSyncStatus()` and `usePendingChanges()` read it, and a
   * client the provider creates sends flag edits through it.
   */
  syncClient?: SyncClientLike
  /**
   * Flags fetched on the server (e.g. `GET /api/flags`). Rendered on the
   * server, by hydration, and until the client has newer flags, so
   * server-rendered pages show the right flags without a flash. A client the
   * provider creates starts from them (its `bootstrap` option); with a client
   * of your own they are shown until it has the server's set, or a cached set
   * with a higher revision. A cached set from an earlier visit never replaces
   * them. Read once, at the first render.
   */
  bootstrap?: readonly ClientFlag[]
}

/**
 * Makes flags available to the hooks below it.
 *
 * @example
 * <FlagsyncProvider url="https://flags.example.com/stream" sdkKey={key} bootstrap={serverFlags}>
 *   <App />
 * </FlagsyncProvider>
 */
export function FlagsyncProvider(props: FlagsyncProviderProps): ReactNode {
  const { client: given, url, sdkKey, syncClient, children } = props
  const [bootstrap] = useState(props.bootstrap)
  const options = useRef(props.options)
  const [created, setCreated] = useState<FlagClient>()

  // Declared before the effect that creates the client, so that one reads the options of the same render.
  useEffect(() => {
    options.current = props.options
  })

  // Effects never run on the server: no IndexedDB, fetch or stream there.
  useEffect(() => {
    if (given || !url) return
    const client = createFlagClient({
      ...options.current,
      ...(Array.isArray(bootstrap) ? { bootstrap } : {}),
      ...(syncClient ? { syncClient } : {}),
      streamUrl: url,
      ...(sdkKey === undefined ? {} : { sdkKey }),
    })
    setCreated(client)
    return () => {
      setCreated(undefined)
      void client.close()
    }
  }, [given, url, sdkKey, syncClient, bootstrap])

  const client = given ?? created
  const value = useMemo(
    () => ({ flags: new FlagStore(client, bootstrap), sync: syncClient }),
    [client, bootstrap, syncClient],
  )
  return <FlagsyncContext.Provider value={value}>{children}</FlagsyncContext.Provider>
}
