import { Component, type ReactNode, Suspense } from 'react'

interface BoundaryState {
  error: unknown
}

/**
 * Where a page loaded on demand (`lazy-pages.ts`) is shown: "Loading…" while its chunk arrives, and if the chunk
 * cannot be fetched (offline before the service worker had cached it, or a new build replaced it) an alert saying
 * so, instead of an empty app. Give it a `key` per page, so opening another page starts afresh.
 */
export function PageBoundary(props: { children: ReactNode }) {
  return (
    <LoadFailure>
      <Suspense fallback={<p className="loading">Loading…</p>}>{props.children}</Suspense>
    </LoadFailure>
  )
}

class LoadFailure extends Component<{ children: ReactNode }, BoundaryState> {
  override state: BoundaryState = { error: null }

  static getDerivedStateFromError(error: unknown): BoundaryState {
    return { error }
  }

  override render() {
    if (this.state.error === null) return this.props.children
    const reason = this.state.error instanceof Error ? this.state.error.message : String(this.state.error)
    return (
      <div role="alert" className="error">
        <p>This page could not be loaded: {reason}</p>
        <p className="hint">Its code comes from the service: reload once the service can be reached.</p>
        <button type="button" onClick={() => window.location.reload()}>
          Reload
        </button>
      </div>
    )
  }
}
