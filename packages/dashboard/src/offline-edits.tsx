import type { Operation } from '@flagsync/protocol'
import { FlagsyncProvider, usePendingChanges, useSyncStatus } from '@flagsync/react'
import {
  type Conflict,
  type ConflictResolution,
  createSyncClient,
  type DeliveryError,
  type SyncClient,
} from '@flagsync/sync-client'
import { useEffect, useMemo, useState } from 'react'
import { CSRF_HEADER, errorText } from './api.js'
import { describeOperation } from './describe-operation.js'
import { ErrorLine } from './error-line.js'
import type { Outbox } from './flag-write.js'
import { type AnswerTap, answerTap, deliveringOutbox } from './outbox-delivery.js'
import type { Environment } from './types.js'

export type { Outbox } from './flag-write.js'

const clients = new Map<string, { client: SyncClient; tap: AnswerTap }>()

/**
 * One sync client per environment, for the page's lifetime: its outbox is an
 * IndexedDB database of its own, so edits queued offline survive a reload and
 * are delivered, compacted and merged by `POST /api/environments/:id/sync`
 * (the session cookie and the CSRF header, checked against the role table;
 * approval environments turn them into change requests). Its requests go
 * through a tap that keeps the service's answer per batch for the editor.
 */
function outboxOf(envId: string, actor: string): { client: SyncClient; tap: AnswerTap } {
  let entry = clients.get(envId)
  if (!entry) {
    const tap = answerTap()
    const client = createSyncClient({
      webhookUrl: `${location.origin}/api/environments/${encodeURIComponent(envId)}/sync`,
      headers: { [CSRF_HEADER]: 'true' },
      dbName: `flagsync-dashboard-${envId}`,
      actor,
      fetch: tap.fetch,
    })
    tap.attach(client)
    client.start()
    entry = { client, tap }
    clients.set(envId, entry)
  }
  return entry
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
  onReady: (outbox: Outbox) => void
  onPending: (envId: string, operations: readonly Operation[]) => void
}) {
  const { environments, actor, onReady } = props
  const outboxes = useMemo(() => new Map(environments.map((e) => [e.id, outboxOf(e.id, actor)])), [environments, actor])
  useEffect(() => {
    onReady(
      deliveringOutbox((envId) => {
        const entry = outboxes.get(envId)
        if (!entry) throw new Error(`no outbox for environment ${envId}`)
        return entry
      }),
    )
  }, [outboxes, onReady])
  return (
    <section className="pending" aria-label="Queued edits">
      {environments.map((env) => {
        const sync = outboxes.get(env.id)?.client
        return sync ? (
          <FlagsyncProvider key={env.id} syncClient={sync}>
            <EnvironmentPending env={env} sync={sync} onPending={props.onPending} />
          </FlagsyncProvider>
        ) : null
      })}
    </section>
  )
}

function EnvironmentPending(props: {
  env: Environment
  sync: SyncClient
  onPending: (envId: string, operations: readonly Operation[]) => void
}) {
  const entries = usePendingChanges('flags')
  const status = useSyncStatus()
  const { env, onPending, sync } = props
  const [conflicts, setConflicts] = useState<Conflict[]>([])
  const [readError, setReadError] = useState<unknown>(null)
  const conflictCount = status?.conflicts ?? 0
  useEffect(() => {
    setReadError(null)
    if (conflictCount === 0) {
      setConflicts([])
      return
    }
    sync.conflicts().then(setConflicts, setReadError)
  }, [sync, conflictCount])
  useEffect(() => {
    onPending(
      env.id,
      entries.map((e) => e.operation),
    )
  }, [entries, env.id, onPending])
  if (entries.length === 0 && !status?.lastError && conflicts.length === 0 && !readError) return null
  return (
    <div className="pending-env" data-env={env.slug} data-pending={entries.length}>
      <h3>
        {env.name}: {entries.length} edit{entries.length === 1 ? '' : 's'} waiting
        {conflicts.length ? `, ${conflicts.length} conflict${conflicts.length === 1 ? '' : 's'} to resolve` : ''} (
        {status?.state ?? 'starting'})
      </h3>
      {env.require_approval && entries.length ? (
        <p className="hint">{env.name} requires approval: delivered edits of existing flags become change requests.</p>
      ) : null}
      {status?.lastError ? <LastAttempt error={status.lastError} sync={sync} onError={setReadError} /> : null}
      <ErrorLine errors={[readError]} />
      {conflicts.map((c) => (
        <ConflictCard key={c.id} conflict={c} resolve={(how) => sync.resolve(c.id, how)} />
      ))}
      <ul>
        {entries.map((e) => (
          <li key={e.id}>{describeOperation(e.operation)}</li>
        ))}
      </ul>
    </div>
  )
}

/**
 * Why the last delivery failed. A refusal that names the operation (a 403 or
 * 422 of an edit queued offline) blocks the queue behind it until it is
 * discarded: the button drops exactly the operations it was compacted from.
 */
export function LastAttempt(props: { error: DeliveryError; sync: SyncClient; onError: (error: unknown) => void }) {
  const ids = props.error.kind === 'rejected' ? props.error.outboxIds : undefined
  return (
    <p className="error">
      Last attempt: {props.error.message}{' '}
      {ids?.length ? (
        <button type="button" onClick={() => props.sync.discard(ids).catch(props.onError)}>
          Discard the refused edit
        </button>
      ) : null}
    </p>
  )
}

const show = (record: Record<string, unknown> | null, field: string, gone: string) =>
  record === null ? gone : field in record ? JSON.stringify(record[field]) : '(not set)'

/**
 * A queued edit the sync route answered with a conflict (someone changed or
 * deleted the flag since this page saw it): base, mine and theirs for each
 * field, and the resolutions the sync client offers.
 */
function ConflictCard(props: { conflict: Conflict; resolve: (how: ConflictResolution) => Promise<void> }) {
  const { conflict } = props
  const mine =
    conflict.mine.action === 'update'
      ? conflict.mine.changes
      : conflict.mine.action === 'insert'
        ? conflict.mine.record
        : null
  const fields = conflict.fields.length ? conflict.fields : Object.keys(mine ?? {})
  const [error, setError] = useState<string | null>(null)
  const act = (how: ConflictResolution) => props.resolve(how).catch((e: unknown) => setError(errorText(e)))
  return (
    <section className="conflict" data-conflict={conflict.recordId} aria-label={`Conflict on ${conflict.recordId}`}>
      <p>
        <strong>{conflict.recordId}</strong>: {conflict.reason}
      </p>
      <table className="diff">
        <thead>
          <tr>
            <th scope="col">Field</th>
            <th scope="col">Base</th>
            <th scope="col">Mine</th>
            <th scope="col">Theirs</th>
          </tr>
        </thead>
        <tbody>
          {fields.map((f) => (
            <tr key={f}>
              <th scope="row">{f}</th>
              <td>{show(conflict.base, f, '(unknown)')}</td>
              <td>{show(mine, f, '(delete)')}</td>
              <td>{show(conflict.current, f, '(deleted)')}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="actions">
        {conflict.kind === 'deleted' ? (
          <button type="button" onClick={() => void act('recreate')}>
            Re-create with my changes
          </button>
        ) : (
          <button type="button" onClick={() => void act('mine')}>
            {conflict.mine.action === 'delete' ? 'Delete anyway' : 'Keep mine'}
          </button>
        )}
        <button type="button" onClick={() => void act('theirs')}>
          {conflict.mine.action === 'delete' ? 'Keep theirs (do not delete)' : 'Take theirs'}
        </button>
      </div>
      {error ? <p className="error">{error}</p> : null}
    </section>
  )
}
