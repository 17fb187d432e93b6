import { Fragment } from 'react'
import type { DiffRow } from './diff.js'

/**
 * A field name that may wrap after each `_` and nowhere else (`rollout_` / `percentage` on a phone): its column
 * needs only the longest part, and a long value beside it never squeezes it to `rule|s`.
 */
function FieldName(props: { name: string }) {
  let at = 0
  return props.name.split('_').map((part) => {
    const offset = at
    at += part.length + 1
    return offset === 0 ? (
      part
    ) : (
      <Fragment key={offset}>
        _<wbr />
        {part}
      </Fragment>
    )
  })
}

/** A field diff's rows: the field, its value before (struck) and after (inserted), in a `.diff` table's body. */
export function DiffRows(props: { rows: DiffRow[] }) {
  return props.rows.map((d) => (
    <tr key={d.field}>
      <th scope="row">
        <FieldName name={d.field} />
      </th>
      <td>
        <del>{d.before}</del>
      </td>
      <td>
        <ins>{d.after}</ins>
      </td>
    </tr>
  ))
}
