import { type Operation, withoutBidiControls } from '@flagsync/protocol'

const MAX_VALUE = 60

const short = (value: unknown) => {
  const text = JSON.stringify(value) ?? 'null'
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE - 1)}…` : text
}

/**
 * A queued operation in one line for the pending panel: what it does to which flag, field by field. Bidirectional
 * controls in the values it quotes are left out, so none can reorder the line.
 */
export function describeOperation(op: Operation): string {
  return withoutBidiControls(composeLine(op))
}

function composeLine(op: Operation): string {
  if (op.action === 'insert') return `create ${op.recordId}`
  if (op.action === 'delete') return `delete ${op.recordId}`
  const fields = Object.entries(op.changes).map(([field, value]) => `${field} = ${short(value)}`)
  return `update ${op.recordId}: ${fields.join('; ')}`
}
