import type { AuditEntryWire, ServiceAuditEntryWire, ServiceAuditPageWire } from '@flagsync/protocol'
import { useInfiniteQuery } from '@tanstack/react-query'
import { useMemo } from 'react'
import { api } from './api.js'
import { CodeText } from './code-text.js'
import { ErrorLine } from './error-line.js'
import { type HistoryNames, isFlagMeta, sentenceOf } from './history-words.js'
import { queryKeys } from './query-keys.js'
import { useUsers } from './use-users.js'

type Entry = ServiceAuditEntryWire
type Page = ServiceAuditPageWire
const NO_ENTRIES: Entry[] = []

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
    case 'schedule':
      return `applied schedule #${source.id}`
    default:
      return source.name
  }
}

const field = (flag: unknown, name: string) =>
  flag && typeof flag === 'object' && name in flag ? JSON.stringify((flag as Record<string, unknown>)[name]) : '—'

/**
 * The fields listed under an update's sentence: an archive's record (every environment's definition, kept for the
 * restore) is the sentence's "archived", never a line of JSON.
 */
const shownFields = (e: Entry) => (isFlagMeta(e) ? e.changedFields.filter((f) => f !== 'archived') : e.changedFields)

/** The page of `url` that starts at `cursor` (a previous page's `nextCursor`). */
const pageUrl = (url: string, cursor: string | null) =>
  cursor === null ? url : `${url}${url.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(cursor)}`

/**
 * The audit trail: a flag's history in one environment (with the changes of
 * the segments it used), or a project's changes (its segments too), newest
 * first, older pages on request. Each entry is a sentence (`sentenceOf`: who,
 * through which request or schedule, what, where), then when and from which API
 * route or sync batch, then each changed field before → after.
 */
export function History(props: { url: string; environmentName?: (id: string) => string | undefined; title: string }) {
  const inFlagHistory = /\/flags\/[^/]+\/history(\?|$)/.test(props.url)
  const users = useUsers()
  const query = useInfiniteQuery({
    queryKey: queryKeys.history(props.url),
    queryFn: ({ pageParam }) => api<Page>('GET', pageUrl(props.url, pageParam)),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.nextCursor,
  })
  const entries = useMemo(() => query.data?.pages.flatMap((p) => p.entries) ?? NO_ENTRIES, [query.data])
  const names = useMemo<HistoryNames>(() => {
    const byEmail = new Map((users.data ?? []).map((u) => [u.email, u.name || u.email]))
    const byId = new Map((users.data ?? []).map((u) => [u.id, u.name || u.email]))
    return { person: (email) => byEmail.get(email), user: (id) => byId.get(id), environment: props.environmentName }
  }, [users.data, props.environmentName])
  return (
    <section aria-label={props.title} className="history">
      <h3>{props.title}</h3>
      <ErrorLine errors={[query.error]} />
      {query.isSuccess && entries.length === 0 ? <p className="hint">No changes recorded.</p> : null}
      <ol>
        {entries.map((e) => (
          <li key={`${e.environment_id ?? ''}-${e.revision}`} data-revision={e.revision}>
            <p>
              <strong className="sentence">
                <CodeText text={sentenceOf(e, names)} />
              </strong>
              {inFlagHistory && e.collection === 'segments' ? ', a segment this flag uses' : ''}
              <br />
              <span className="hint">
                <time dateTime={e.time}>{new Date(e.time).toLocaleString()}</time>
                {e.declaredActor ? ` · ${whoOf(e)}` : ''}
                {sourceOf(e) ? ` · ${sourceOf(e)}` : ''}
              </span>
            </p>
            {e.action === 'update' ? (
              <ul className="changes">
                {shownFields(e).map((f) => (
                  <li key={f}>
                    {f}: <del>{field(e.before, f)}</del> → <ins>{field(e.after, f)}</ins>
                  </li>
                ))}
              </ul>
            ) : null}
          </li>
        ))}
      </ol>
      {query.hasNextPage ? (
        <button type="button" onClick={() => query.fetchNextPage()} disabled={query.isFetchingNextPage}>
          {query.isFetchingNextPage ? 'Loading older changes…' : 'Load older changes'}
        </button>
      ) : null}
    </section>
  )
}
