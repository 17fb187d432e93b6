import type { Operation } from '@flagsync/protocol'
import { FlagsyncProvider, usePendingChanges, useSyncStatus } from '@flagsync/react'
import { createSyncClient, type SyncClient } from '@flagsync/sync-client'
import { useEffect, useMemo } from 'react'
import { CSRF_HEADER } from './api.js'
import type { Environment } from './types.js'

/** Queues a flag edit in an environment's outbox; delivered to its sync route when the service is reachable. */
export type QueueEdit = (
  envId: string,
  key: string,
  changes: Record<string, unknown>,
  baseRevision?: number,
) => Promise<void>

const clients = new Map<string, SyncClient>()

/**
 * One sync client per environment, for the page's lifetime: its outbox is an
 * IndexedDB database of its own, so edits queued offline survive a reload and
 * are delivered, compacted and merged by `POST /api/environments/:id/sync`
 * (the session cookie and the CSRF header, checked against the role table;
 * approval environments turn them into change requests).
 */
function outboxOf(envId: string, actor: string): SyncClient {
  let client = clients.get(envId)
  if (!client) {
    client = createSyncClient({
      webhookUrl: `${location.origin}/api/environments/${encodeURIComponent(envId)}/sync`,
      headers: { [CSRF_HEADER]: 'true' },
      dbName: `flagsync-dashboard-${envId}`,
      actor,
    })
    client.start()
    clients.set(envId, client)
  }
  return client
}

/**
 * The pending panel: every environment's queued flag edits and its sync
 * status (the console's panel, through `@flagsync/react`'s hooks). It hands
 * the parent a function to queue edits and each environment's queued
 * operations, which the table shows on top of the server's flags.
 */
export default function OfflineEdits(props: {
  environments: Environment[]
  actor: string
  onReady: (queue: QueueEdit) => void
  onPending: (envId: string, operations: readonly Operation[]) => void
}) {
  const { environments, actor, onReady } = props
  const outboxes = useMemo(() => new Map(environments.map((e) => [e.id, outboxOf(e.id, actor)])), [environments, actor])
  useEffect(() => {
    onReady(async (envId, key, changes, baseRevision) => {
      const outbox = outboxes.get(envId)
      if (!outbox) throw new Error(`no outbox for environment ${envId}`)
      await outbox.update('flags', key, changes, baseRevision === undefined ? {} : { baseRevision })
    })
  }, [outboxes, onReady])
  return (
    <section className="pending" aria-label="Queued edits">
      {environments.map((env) => {
        const sync = outboxes.get(env.id)
        return sync ? (
          <FlagsyncProvider key={env.id} syncClient={sync}>
            <EnvironmentPending env={env} onPending={props.onPending} />
          </FlagsyncProvider>
        ) : null
      })}
    </section>
  )
}

function EnvironmentPending(props: {
  env: Environment
  onPending: (envId: string, operations: readonly Operation[]) => void
}) {
  const entries = usePendingChanges('flags')
  const status = useSyncStatus()
  const { env, onPending } = props
  useEffect(() => {
    onPending(
      env.id,
      entries.map((e) => e.operation),
    )
  }, [entries, env.id, onPending])
  if (entries.length === 0 && !status?.lastError) return null
  return (
    <div className="pending-env" data-env={env.slug} data-pending={entries.length}>
      <h3>
        {env.name}: {entries.length} edit{entries.length === 1 ? '' : 's'} waiting ({status?.state ?? 'starting'})
      </h3>
      {status?.lastError ? <p className="error">Last attempt: {status.lastError.message}</p> : null}
      <ul>
        {entries.map((e) => (
          <li key={e.id}>
            {e.operation.action} {e.operation.recordId}
            {e.operation.action === 'update' ? ` ${JSON.stringify(e.operation.changes)}` : ''}
          </li>
        ))}
      </ul>
    </div>
  )
}
