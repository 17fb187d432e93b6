import type { DiffRow } from './diff.js'

/** A field diff's rows: the field, its value before (struck) and after (inserted), in a `.diff` table's body. */
export function DiffRows(props: { rows: DiffRow[] }) {
  return props.rows.map((d) => (
    <tr key={d.field}>
      <th scope="row">{d.field}</th>
      <td>
        <del>{d.before}</del>
      </td>
      <td>
        <ins>{d.after}</ins>
      </td>
    </tr>
  ))
}
