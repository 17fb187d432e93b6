import type { AuditEntryWire } from '@flagsync/protocol'
import { useEffect, useState } from 'react'
import { api, errorText } from './api.js'

type Entry = AuditEntryWire & { environment_id?: string }

/** Who made a change: the verified identity, and what the client declared beside it. */
export function whoOf(entry: Pick<AuditEntryWire, 'actor' | 'declaredActor'>): string {
  const verified = entry.actor?.name ?? 'unknown'
  const declared = entry.declaredActor?.name
  return declared && declared !== verified ? `${verified} (as “${declared}”)` : verified
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
    default:
      return source.name
  }
}

const field = (flag: unknown, name: string) =>
  flag && typeof flag === 'object' && name in flag ? JSON.stringify((flag as Record<string, unknown>)[name]) : '—'

/**
 * The audit trail (issue 16's routes): a flag's history in one environment,
 * or every change of a project. Who, when, what changed (before → after per
 * field) and from which API route, sync batch or change request.
 */
export function History(props: { url: string; environmentName?: (id: string) => string | undefined; title: string }) {
  const [entries, setEntries] = useState<Entry[]>([])
  const [error, setError] = useState<string | null>(null)
  useEffect(() => {
    api<{ entries: Entry[] }>('GET', props.url)
      .then((page) => setEntries(page.entries))
      .catch((e) => setError(errorText(e)))
  }, [props.url])
  return (
    <section aria-label={props.title} className="history">
      <h3>{props.title}</h3>
      {error ? <p className="error">{error}</p> : null}
      {entries.length === 0 && !error ? <p className="hint">No changes recorded.</p> : null}
      <ol>
        {entries.map((e) => (
          <li key={`${e.environment_id ?? ''}-${e.revision}`} data-revision={e.revision}>
            <p>
              <strong>
                {e.action} {e.key}
              </strong>
              {e.environment_id && props.environmentName ? ` in ${props.environmentName(e.environment_id) ?? ''}` : ''}{' '}
              by <span className="who">{whoOf(e)}</span>, {new Date(e.time).toLocaleString()}
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
