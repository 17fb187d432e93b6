import type { AuditEntryWire, ServiceAuditEntryWire } from '@flagsync/protocol'
import { useQuery } from '@tanstack/react-query'
import { api } from './api.js'
import { ErrorLine } from './error-line.js'
import { queryKeys } from './query-keys.js'

type Entry = ServiceAuditEntryWire
const NO_ENTRIES: Entry[] = []

/** Who made a change: the verified identity, and what the client declared beside it. */
export function whoOf(entry: Pick<AuditEntryWire, 'actor' | 'declaredActor'>): string {
  const verified = entry.actor?.name ?? 'unknown'
  const declared = entry.declaredActor?.name
  return declared && declared !== verified ? `${verified} (as “${declared}”)` : verified
}

/**
 * The people behind a change: `by B`; for a change request's approval
 * `requested by A, approved by B` (the requester filed it, the approver applied it);
 * for a scheduled change `scheduled by A, approved by B` (the creator's change, applied at its time).
 */
export function byOf(entry: Pick<AuditEntryWire, 'actor' | 'declaredActor' | 'source'>): string {
  const source = entry.source
  if (source?.type === 'change_request' && source.requestedBy) {
    return `requested by ${source.requestedBy.name}, approved by ${whoOf(entry)}`
  }
  if (source?.type === 'schedule') {
    const approval = source.approvedBy ? `, approved by ${source.approvedBy.name}` : ''
    return `scheduled by ${source.createdBy.name}${approval}`
  }
  return `by ${whoOf(entry)}`
}

/**
 * What changed: `update checkout`, or for a segment `update segment beta`;
 * in a flag's history (`inFlagHistory`) a segment entry is there because the
 * flag's rules used that segment, and says so.
 */
export function headlineOf(entry: Pick<Entry, 'action' | 'key' | 'collection'>, inFlagHistory = false): string {
  if (entry.collection !== 'segments') return `${entry.action} ${entry.key}`
  return `${entry.action} segment ${entry.key}${inFlagHistory ? ', which this flag uses' : ''}`
}

/** Where a change came from, in words. */
export function sourceOf(entry: Pick<AuditEntryWire, 'source'>): string {
  const source = entry.source
  if (!source) return ''
  switch (source.type) {
    case 'api':
      return `API ${source.route}`
    case 'sync':
      return `sync batch ${source.batchId.slice(0, 8)}… operation ${source.operationIndex + 1}`
    case 'change_request':
      return `change request #${source.id}`
    case 'schedule':
      return `applied schedule #${source.id}`
    default:
      return source.name
  }
}

const field = (flag: unknown, name: string) =>
  flag && typeof flag === 'object' && name in flag ? JSON.stringify((flag as Record<string, unknown>)[name]) : '—'

/**
 * The audit trail: a flag's history in one environment (with the changes of
 * the segments it used), or every change of a project (its segments too).
 * Who, when, what changed (before → after per field) and from which API
 * route, sync batch, change request or schedule.
 */
export function History(props: { url: string; environmentName?: (id: string) => string | undefined; title: string }) {
  const inFlagHistory = /\/flags\/[^/]+\/history(\?|$)/.test(props.url)
  const query = useQuery({
    queryKey: queryKeys.history(props.url),
    queryFn: () => api<{ entries: Entry[] }>('GET', props.url),
  })
  const entries = query.data?.entries ?? NO_ENTRIES
  return (
    <section aria-label={props.title} className="history">
      <h3>{props.title}</h3>
      <ErrorLine errors={[query.error]} />
      {query.isSuccess && entries.length === 0 ? <p className="hint">No changes recorded.</p> : null}
      <ol>
        {entries.map((e) => (
          <li key={`${e.environment_id ?? ''}-${e.revision}`} data-revision={e.revision}>
            <p>
              <strong>{headlineOf(e, inFlagHistory)}</strong>
              {e.environment_id && props.environmentName ? ` in ${props.environmentName(e.environment_id) ?? ''}` : ''}{' '}
              <span className="who">{byOf(e)}</span>, {new Date(e.time).toLocaleString()}
              {sourceOf(e) ? <span className="hint"> · {sourceOf(e)}</span> : null}
            </p>
            {e.action === 'update' ? (
              <ul className="changes">
                {e.changedFields.map((f) => (
                  <li key={f}>
                    {f}: <del>{field(e.before, f)}</del> → <ins>{field(e.after, f)}</ins>
                  </li>
                ))}
              </ul>
            ) : null}
          </li>
        ))}
      </ol>
    </section>
  )
}
