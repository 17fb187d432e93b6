import { applyFlagPatch, type Flag, flagSchema, type Issue, toIssues } from '@flagsync/protocol'
import type { Checked, FlagModel } from '@flagsync/store'
import { OperationRejected } from './operation-rejected.js'
import { quickFlag, quickPatch } from './quick-parse.js'

type Data = Record<string, unknown>

const isData = (value: unknown): value is Data => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * The flat API's flags for the store's write core (`writeFlagChange`): the protocol's `flagSchema` and
 * `applyFlagPatch`, with the hand-written checks of the usual well-formed flag first (quick-parse.ts). Its
 * refusals word the first issue as the flat API answers them (`invalid flag: is_enabled: …`).
 */
export const flatFlagModel: FlagModel<Flag> = {
  parse(record, key) {
    const quick = isData(record) && key !== '' ? quickFlag(record, key) : undefined
    if (quick) return { ok: true, value: quick }
    const parsed = flagSchema.safeParse(isData(record) && key !== '' ? { ...record, key } : record)
    return parsed.success ? { ok: true, value: parsed.data } : refused('flag', toIssues(parsed.error))
  },
  merge(current, patch) {
    const quick = isData(patch) ? quickPatch(current, patch) : undefined
    if (quick) return { ok: true, value: quick }
    const merged = applyFlagPatch(current, patch)
    return merged.ok ? { ok: true, value: merged.flag } : refused('patch', merged.issues)
  },
}

function refused(what: string, issues: Issue[]): Checked<never> {
  const first = issues[0]
  const message = `invalid ${what}: ${first ? `${first.path}: ${first.message}` : 'invalid'}`
  return { ok: false, invalid: { message, issues, stage: 'input' } }
}

/** A sync insert's record names its own key only as its `recordId`; anything else is the sender's mistake. */
export function assertRecordKey(record: Data, recordId: string): void {
  if (record.key !== undefined && record.key !== recordId) {
    throw new OperationRejected('record.key must equal recordId', [
      { path: 'record.key', message: `expected ${JSON.stringify(recordId)} (the recordId)` },
    ])
  }
}
