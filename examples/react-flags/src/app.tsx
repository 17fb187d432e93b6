import {
  useFlagClient,
  useFlagDetails,
  useFlagStatus,
  useFlags,
  usePendingChanges,
  useSyncStatus,
} from '@flagsync/react'

/** The storefront a flag changes, the flags to flip, and what is still waiting to be sent. */
export function App({ user }: { user: string }) {
  return (
    <main>
      <header>
        <h1>Store</h1>
        <Connection />
      </header>
      <Checkout user={user} />
      <FlagList />
      <Pending />
    </main>
  )
}

function Checkout({ user }: { user: string }) {
  const newCheckout = useFlagDetails('new-checkout', false, { user_id: user })
  return (
    <section aria-labelledby="checkout-heading" className="card">
      <h2 id="checkout-heading">Checkout</h2>
      <p data-testid="checkout" data-variant={newCheckout.value ? 'new' : 'classic'}>
        {newCheckout.value ? 'New one-page checkout' : 'Classic checkout'}
      </p>
      <MissingFlag flagKey="new-checkout" found={newCheckout.flagFound} fallback={false} />
    </section>
  )
}

/**
 * A flag this page reads that is not in the flag set: said on the page, since its fallback alone looks like a flag
 * that is off. Nothing is said until the client has a complete set (from the server, or saved by an earlier visit).
 */
function MissingFlag({ flagKey, found, fallback }: { flagKey: string; found: boolean; fallback: unknown }) {
  const { source } = useFlagStatus()
  if (found || source === 'none') return null
  return (
    <p className="missing" role="status" data-testid="missing-flag" data-flag={flagKey}>
      No flag <code>{flagKey}</code> {source === 'cache' ? 'in the flags saved by the last visit' : 'on the server'}:
      showing its fallback, <code>{JSON.stringify(fallback)}</code>. Create it to switch it.
    </p>
  )
}

function FlagList() {
  const flags = useFlags()
  const client = useFlagClient()
  return (
    <section aria-labelledby="flags-heading" className="card">
      <h2 id="flags-heading">Flags</h2>
      <ul className="flags">
        {flags.map((flag) => (
          <li key={flag.key}>
            <label>
              <input
                type="checkbox"
                role="switch"
                aria-checked={flag.is_enabled}
                aria-label={flag.key}
                checked={flag.is_enabled}
                onChange={() => void client?.updateFlag(flag.key, { is_enabled: !flag.is_enabled })}
              />
              <code>{flag.key}</code>
            </label>
          </li>
        ))}
      </ul>
    </section>
  )
}

function Connection() {
  const stream = useFlagStatus()
  const sync = useSyncStatus()
  return (
    <p className="status">
      <span data-testid="stream" data-state={stream.state}>
        stream: {stream.state}
      </span>
      <span data-testid="sync" data-state={sync?.state ?? 'loading'} data-pending={sync?.pending ?? 0}>
        outbox: {sync ? `${sync.state}, ${sync.pending} pending` : 'loading'}
      </span>
    </p>
  )
}

function Pending() {
  const pending = usePendingChanges('flags')
  if (pending.length === 0) return null
  return (
    <section aria-labelledby="pending-heading" className="card">
      <h2 id="pending-heading">Not yet sent</h2>
      <ul data-testid="pending">
        {pending.map((entry) => (
          <li key={entry.id}>
            {entry.operation.action} <code>{entry.operation.recordId}</code>
          </li>
        ))}
      </ul>
    </section>
  )
}
