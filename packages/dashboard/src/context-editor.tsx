import { useEffect, useId, useRef, useState } from 'react'
import {
  type AttributeType,
  type ContextRow,
  contextOfJson,
  contextOfRows,
  fitsRows,
  rowsOfContext,
  type TestContext,
  USER_ID,
} from './test-context.js'

/** The editor's state: rows, or raw JSON; `context` is what it says now (null while something is wrong). */
export interface ContextDraft {
  mode: 'rows' | 'json'
  rows: ContextRow[]
  json: string
}

export function contextDraftOf(context: TestContext): ContextDraft {
  return {
    mode: fitsRows(context) ? 'rows' : 'json',
    rows: rowsOfContext(context),
    json: JSON.stringify(context, null, 2),
  }
}

/** What the draft says: a context, or the problem with the field it names (a row's index, or the JSON). */
export function readContextDraft(draft: ContextDraft): { context: TestContext } | { error: string; row?: number } {
  return draft.mode === 'json' ? contextOfJson(draft.json) : contextOfRows(draft.rows)
}

/**
 * A test context as attribute rows (name, type, value; `user_id`, the
 * bucketing id, first and always there) or as raw JSON. `error` (this
 * editor's or the service's 422) is shown next to the field it is about.
 */
export function ContextEditor(props: {
  draft: ContextDraft
  onChange: (draft: ContextDraft) => void
  error: { text: string; row?: number } | null
}) {
  const { draft, onChange } = props
  const errorId = useId()
  const switchMode = () => {
    if (draft.mode === 'rows') {
      const read = contextOfRows(draft.rows)
      onChange({ ...draft, mode: 'json', json: 'context' in read ? JSON.stringify(read.context, null, 2) : draft.json })
      return
    }
    const read = contextOfJson(draft.json)
    if ('context' in read && fitsRows(read.context))
      onChange({ ...draft, mode: 'rows', rows: rowsOfContext(read.context) })
    else onChange({ ...draft, mode: 'rows' })
  }
  return (
    <fieldset className="context-editor">
      <legend>Context</legend>
      {draft.mode === 'rows' ? (
        <ContextRows
          rows={draft.rows}
          onChange={(rows) => onChange({ ...draft, rows })}
          error={props.error}
          errorId={errorId}
        />
      ) : (
        <label className="context-json">
          Context as JSON
          <textarea
            rows={8}
            spellCheck={false}
            value={draft.json}
            aria-invalid={props.error !== null}
            aria-describedby={props.error ? errorId : undefined}
            onChange={(e) => onChange({ ...draft, json: e.target.value })}
          />
        </label>
      )}
      {props.error && (draft.mode === 'json' || props.error.row === undefined) ? (
        <p className="error" id={errorId} role="alert">
          {props.error.text}
        </p>
      ) : null}
      <button type="button" className="ghost" onClick={switchMode}>
        {draft.mode === 'rows' ? 'Edit as JSON' : 'Edit as rows'}
      </button>
    </fieldset>
  )
}

function ContextRows(props: {
  rows: ContextRow[]
  onChange: (rows: ContextRow[]) => void
  error: { text: string; row?: number } | null
  errorId: string
}) {
  const { rows, onChange } = props
  // "Add attribute" moves the focus to the new row's name, so the keyboard goes on typing there.
  const list = useRef<HTMLUListElement>(null)
  const [added, setAdded] = useState(0)
  useEffect(() => {
    if (added > 0) list.current?.querySelector<HTMLInputElement>('li:last-child input')?.focus()
  }, [added])
  const set = (i: number, patch: Partial<ContextRow>) =>
    onChange(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)))
  return (
    <>
      <ul className="context-rows" ref={list}>
        {rows.map((row, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity but their place
          <li key={i}>
            <ContextRowFields
              row={row}
              isUserId={i === 0 && row.name === USER_ID}
              set={(patch) => set(i, patch)}
              onRemove={() => onChange(rows.filter((_, j) => j !== i))}
              errorId={props.error?.row === i ? props.errorId : undefined}
            />
            {props.error?.row === i ? (
              <p className="error" id={props.errorId} role="alert">
                {props.error.text}
              </p>
            ) : null}
          </li>
        ))}
      </ul>
      <button
        type="button"
        onClick={() => {
          onChange([...rows, { name: '', type: 'string', value: '' }])
          setAdded((n) => n + 1)
        }}
      >
        Add attribute
      </button>
    </>
  )
}

function ContextRowFields(props: {
  row: ContextRow
  isUserId: boolean
  set: (patch: Partial<ContextRow>) => void
  onRemove: () => void
  errorId: string | undefined
}) {
  const { row, set } = props
  const valueId = useId()
  const label = props.isUserId ? 'User id (user_id, decides rollouts and variants)' : 'Value'
  const invalid = { 'aria-invalid': props.errorId !== undefined, 'aria-describedby': props.errorId }
  return (
    <span className={props.isUserId ? 'context-row user-id' : 'context-row'}>
      {props.isUserId ? null : (
        <label>
          Attribute
          <input value={row.name} onChange={(e) => set({ name: e.target.value })} {...invalid} />
        </label>
      )}
      {props.isUserId ? null : (
        <label>
          Type
          <select value={row.type} onChange={(e) => set(typeChange(row, e.target.value as AttributeType))}>
            <option value="string">string</option>
            <option value="number">number</option>
            <option value="boolean">boolean</option>
          </select>
        </label>
      )}
      <span className="context-value">
        <label htmlFor={valueId}>{label}</label>
        {row.type === 'boolean' ? (
          <select id={valueId} value={row.value} onChange={(e) => set({ value: e.target.value })}>
            <option value="true">true</option>
            <option value="false">false</option>
          </select>
        ) : (
          <input
            id={valueId}
            value={row.value}
            inputMode={row.type === 'number' ? 'decimal' : undefined}
            onChange={(e) => set({ value: e.target.value })}
            {...invalid}
          />
        )}
      </span>
      {props.isUserId ? null : (
        <button
          type="button"
          className="ghost"
          aria-label={`Remove ${row.name || 'attribute'}`}
          onClick={props.onRemove}
        >
          Remove
        </button>
      )}
    </span>
  )
}

/** A boolean row starts as `true`; leaving boolean clears the `true`/`false` text. */
function typeChange(row: ContextRow, type: AttributeType): Partial<ContextRow> {
  if (type === 'boolean') return { type, value: row.value === 'false' ? 'false' : 'true' }
  return { type, value: row.type === 'boolean' ? '' : row.value }
}
