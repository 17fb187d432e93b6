import { DASHBOARD_STREAM_EVENTS, environmentOrderEventSchema } from '@flagsync/protocol'

type Source = Pick<EventSource, 'addEventListener' | 'close'>

/**
 * Calls `onOrder` with a project's environment ids whenever someone reorders
 * them (the service's `environments` event on the dashboard stream). The
 * connection follows one environment of the project, which is enough to hear
 * the project's reorders and costs only that environment's bootstrap. Returns
 * a function that closes it.
 */
export function followEnvironmentOrder(
  projectId: string,
  environmentId: string,
  onOrder: (environmentIds: string[]) => void,
  open: (url: string) => Source = (url) => new EventSource(url),
): () => void {
  const source = open(`/stream?environment_id=${encodeURIComponent(environmentId)}`)
  source.addEventListener(DASHBOARD_STREAM_EVENTS.environments, (event) => {
    let data: unknown
    try {
      data = JSON.parse(String((event as MessageEvent).data))
    } catch {
      return
    }
    const order = environmentOrderEventSchema.safeParse(data)
    if (order.success && order.data.project_id === projectId) onOrder(order.data.environment_ids)
  })
  return () => source.close()
}

/** `environments` sorted by `ids`; any not named keep their relative order after the named ones. */
export function inOrder<T extends { id: string }>(environments: readonly T[], ids: readonly string[]): T[] {
  const rank = new Map(ids.map((id, i) => [id, i]))
  return [...environments].sort((a, b) => (rank.get(a.id) ?? ids.length) - (rank.get(b.id) ?? ids.length))
}
