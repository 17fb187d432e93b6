import { describeFlag } from '@flagsync/evaluation'
import { memo, useCallback, useRef } from 'react'
import { CodeText } from './code-text.js'
import { CellLifecycle, RowTags } from './flag-lifecycle.js'
import type { FlagRow, FlagsByEnvironment } from './flag-view.js'
import { useRowWindow } from './row-window.js'
import type { Environment, Flag } from './types.js'

/** What a cell's buttons do and whether the switch may be used (`blocked`: why not). */
interface CellActions {
  blocked: string | null
  /** An owner's display name from their user id. */
  ownerName: (id: number) => string
  /** The time the lifecycle's "3 days ago" counts from. */
  now: number
  onToggle: (env: Environment, flag: Flag) => void
  onEdit: (envId: string, key: string) => void
}

/**
 * The flags of a project: a row per flag key, a column per environment. A
 * row renders again only when one of its flags, the environments or
 * `blocked` changed: a live update re-renders one row, not a thousand. A
 * table of more than `WINDOW_FROM` rows renders those near the screen
 * (`useRowWindow`); the search filter finds the others.
 */
export function FlagTable(
  props: CellActions & {
    projectName: string
    environments: Environment[]
    rows: FlagRow[]
    /** The flags as saved (segment references kept), environment → key → flag: what the cells describe. */
    saved?: FlagsByEnvironment
    empty: string
  },
) {
  // The rows get stable callbacks that call the latest ones (which close over the panel's current state).
  const latest = useRef(props)
  latest.current = props
  const onToggle = useCallback((env: Environment, flag: Flag) => latest.current.onToggle(env, flag), [])
  const onEdit = useCallback((envId: string, key: string) => latest.current.onEdit(envId, key), [])
  const body = useRef<HTMLTableSectionElement>(null)
  const win = useRowWindow(props.rows.length, body)
  const columns = props.environments.length + 1
  return (
    <div className="table-wrap">
      <table className="flags" aria-rowcount={props.rows.length + 1}>
        <caption className="sr-only">Flags of {props.projectName} by environment</caption>
        <TableHead environments={props.environments} />
        <tbody ref={body}>
          {props.rows.length === 0 ? (
            <tr>
              <td colSpan={columns} className="hint">
                {props.empty}
              </td>
            </tr>
          ) : null}
          <Spacer height={win.before} columns={columns} />
          {props.rows.slice(win.start, win.end).map((row, i) => (
            <FlagRowView
              key={row.key}
              row={row}
              rowIndex={win.start + i + 2}
              saved={props.saved}
              environments={props.environments}
              blocked={props.blocked}
              ownerName={props.ownerName}
              now={props.now}
              onToggle={onToggle}
              onEdit={onEdit}
            />
          ))}
          <Spacer height={win.after} columns={columns} />
        </tbody>
      </table>
    </div>
  )
}

/** The column heads: the flag, then each environment with its colour and whether it needs approval. */
function TableHead(props: { environments: Environment[] }) {
  return (
    <thead>
      <tr>
        <th scope="col">Flag</th>
        {props.environments.map((env) => (
          <th scope="col" key={env.id}>
            <span className="swatch" aria-hidden="true" ref={(el) => el?.style.setProperty('background', env.color)} />
            {env.name}
            {env.require_approval ? <span className="badge">approval</span> : null}
          </th>
        ))}
      </tr>
    </thead>
  )
}

/**
 * The height of the rows a long table leaves unrendered above or below the
 * screen (`useRowWindow`), so the scrollbar and the page's length stay those of every row.
 */
function Spacer(props: { height: number; columns: number }) {
  if (props.height <= 0) return null
  return (
    // biome-ignore lint/a11y/noAriaHiddenOnFocusable: an empty row with nothing to focus, only height
    <tr className="row-spacer" aria-hidden="true">
      <td colSpan={props.columns} ref={(el) => el?.style.setProperty('height', `${props.height}px`)} />
    </tr>
  )
}

/** `rowIndex`: the row's place in the whole table (1 is the header), for `aria-rowindex`. */
type RowProps = CellActions & {
  row: FlagRow
  rowIndex: number
  environments: Environment[]
  saved: FlagsByEnvironment | undefined
}

/** The same row when the same flags, environments and actions are shown: `flagRows` builds new row objects each time. */
function sameRow(a: RowProps, b: RowProps): boolean {
  if (a.environments !== b.environments || a.blocked !== b.blocked || a.rowIndex !== b.rowIndex) return false
  if (a.ownerName !== b.ownerName || a.now !== b.now || a.row.meta?.signature !== b.row.meta?.signature) return false
  if (a.onToggle !== b.onToggle || a.onEdit !== b.onEdit || a.row.key !== b.row.key) return false
  const x = a.row.byEnvironment
  const y = b.row.byEnvironment
  if (x.size !== y.size) return false
  for (const [envId, flag] of x) if (y.get(envId) !== flag) return false
  for (const envId of x.keys())
    if (a.saved?.get(envId)?.get(a.row.key) !== b.saved?.get(envId)?.get(b.row.key)) return false
  return true
}

const FlagRowView = memo(function FlagRowView(props: RowProps) {
  const { row } = props
  const any = [...row.byEnvironment.values()][0]
  return (
    <tr data-flag={row.key} aria-rowindex={props.rowIndex}>
      <th scope="row">
        <span className="flag-key">{row.key}</span>
        <span className="flag-type">{any?.flag_type ?? 'boolean'}</span>
        {any?.description ? <span className="flag-desc">{any.description}</span> : null}
        <RowTags meta={row.meta} ownerName={props.ownerName} />
      </th>
      {props.environments.map((env) => {
        const flag = row.byEnvironment.get(env.id)
        return flag ? (
          <FlagCell
            key={env.id}
            rowKey={row.key}
            env={env}
            flag={flag}
            described={describedFlag(flag, props.saved?.get(env.id)?.get(row.key))}
            meta={row.meta}
            blocked={props.blocked}
            ownerName={props.ownerName}
            now={props.now}
            onToggle={props.onToggle}
            onEdit={props.onEdit}
          />
        ) : (
          <td key={env.id} data-env={env.slug} className="absent">
            not in {env.name}
          </td>
        )
      })}
    </tr>
  )
}, sameRow)

/**
 * What a cell describes: the flag as saved when it is the version the stream
 * shows (same revision), so a segment's rule reads as the segment; else the
 * stream's copy, where a segment's rule is one rule per condition.
 */
function describedFlag(shown: Flag, saved: Flag | undefined): Flag {
  return saved !== undefined && saved.revision !== undefined && saved.revision === shown.revision ? saved : shown
}

function FlagCell(
  props: CellActions & { rowKey: string; env: Environment; flag: Flag; described: Flag; meta: FlagRow['meta'] },
) {
  const { rowKey, env, flag } = props
  return (
    <td data-env={env.slug} data-enabled={String(flag.is_enabled)}>
      <button
        type="button"
        role="switch"
        aria-checked={flag.is_enabled}
        aria-label={`${rowKey} in ${env.name}`}
        className="switch"
        disabled={props.blocked !== null}
        title={props.blocked ?? undefined}
        onClick={() => props.onToggle(env, flag)}
      >
        {flag.is_enabled ? 'On' : 'Off'}
      </button>
      <span className="served">
        <CodeText text={describeFlag(props.described)} />
      </span>
      <CellLifecycle meta={props.meta} envId={env.id} now={props.now} />
      <button
        type="button"
        className="ghost"
        aria-label={`Edit ${rowKey} in ${env.name}`}
        onClick={() => props.onEdit(env.id, rowKey)}
      >
        Edit
      </button>
    </td>
  )
}
