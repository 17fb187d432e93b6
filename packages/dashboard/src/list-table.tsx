import type { ReactNode } from 'react'

/**
 * The dashboard's lists (SDK keys, members, tokens, users): a header row of
 * `columns` plus an actions column named for screen readers only, and the rows.
 */
export function ListTable(props: { columns: string[]; children: ReactNode }) {
  // Scrolls inside its wrapper, so a narrow screen (390 px) scrolls the table, not the page.
  return (
    <div className="table-wrap">
      <table className="list">
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th scope="col" key={c}>
                {c}
              </th>
            ))}
            <th scope="col">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  )
}

/**
 * A row's destructive action. `blocked` is why it cannot be used (shown as the
 * button's title, so a role or a lost connection explains itself); null: usable.
 */
export function RowAction(props: { label: string; blocked: string | null; onClick: () => void; children: ReactNode }) {
  return (
    <button
      type="button"
      className="danger"
      disabled={props.blocked !== null}
      title={props.blocked ?? undefined}
      aria-label={props.label}
      onClick={props.onClick}
    >
      {props.children}
    </button>
  )
}
