import type { Issue } from '@flagsync/protocol'
import type { CommittedFlag } from '../flag-writer.js'
import type { StoredFlag } from '../types.js'
import type { FlagConflict } from './check-base.js'

/**
 * One flag write as its sender meant it, whatever the wire: a REST POST or a sync insert is a `put`, a PATCH or a
 * sync update a `patch` (a JSON merge patch), a DELETE or a sync delete a `delete`. `base` is the revision the
 * sender saw (If-Match, `base_revision`, a sync operation's `baseRevision`): with it, the three-way check runs.
 */
export type FlagWriteIntent =
  | { action: 'put'; key: string; record: unknown; base?: number }
  | { action: 'patch'; key: string; patch: unknown; base?: number }
  | { action: 'delete'; key: string; base?: number }

/** A refused input or candidate: 422 over REST, the operation's rejection in a batch. */
export interface Invalid {
  message: string
  issues: Issue[]
  /** `input`: the record or patch itself; `scope`: the flag against the rest of its scope (prerequisites, …). */
  stage: 'input' | 'scope'
  /** Flags that list this one as a prerequisite, when that is why a delete is refused. */
  dependents?: string[]
}

export type Checked<T> = { ok: true; value: T } | { ok: false; invalid: Invalid }

/** How a server reads its flags: the whole-flag schema and the merge patch (both validate the result whole). */
export interface FlagModel<F extends StoredFlag> {
  /** The flag a put stores under `key` (a record without its own key takes it; the adapter checked one it has). */
  parse(record: unknown, key: string): Checked<F>
  /** Validates a merge patch on its own (also when its flag does not exist); omitted: `merge` validates it. */
  patch?(raw: unknown): Checked<unknown>
  /** The flag a valid patch makes of `current`. */
  merge(current: F, patch: unknown): Checked<F>
}

/** What a write does to its flag, as the approval gate tells writes apart. */
export type FlagChangeKind = 'create' | 'replace' | 'patch' | 'delete'

/** The gate's answer: apply, file for review (a change request), or refuse with a reason. */
export type Gate = 'apply' | 'review' | { forbidden: string }

/** A server's rules around the core: its model, and the checks that read the rest of the transaction. */
export interface FlagWriteRules<F extends StoredFlag> {
  model: FlagModel<F>
  /**
   * A put is staged without reading the flag first (a sync batch's plain insert, the usual bulk upsert): it is then
   * `applied` even when it changes nothing, which `FlagWriter.changes` drops at commit. Ignored with a base or a gate.
   */
  blindPut?: boolean
  /** Who may make this change here, read inside the transaction (the approval policy); default `apply`. */
  gate?(kind: FlagChangeKind): Promise<Gate>
  /** The candidate (null: the flag deleted) against the rest of its scope, inside the transaction. */
  fits?(key: string, candidate: F | null): Promise<Invalid | null>
}

/**
 * The one answer of every flag write; each adapter maps it to its wire (REST status, a batch operation's answer,
 * a change request's state). `before` is the flag as committed before the transaction (its revision answers an
 * unchanged write; the written revision is in the commit's changes).
 */
export type FlagWriteResult<F extends StoredFlag = StoredFlag> =
  /** Staged: commits with the transaction. `flag` null: deleted. `before` null: a blind put, nothing read. */
  | { status: 'applied'; key: string; kind: FlagChangeKind; flag: F | null; before: CommittedFlag | null }
  /** The flag already reads so: nothing staged, filed or recorded. */
  | { status: 'unchanged'; key: string; flag: F; before: CommittedFlag }
  /** The three-way check refused it: others changed what it would overwrite since its base. */
  | { status: 'conflict'; key: string; conflict: FlagConflict }
  /** A patch to be reviewed where approval is required: nothing staged; the adapter files it. */
  | { status: 'needs_approval'; key: string; patch: unknown; flag: F; before: CommittedFlag }
  /** A patch or delete of a flag that does not exist (a delete's adapter may answer it as done). */
  | { status: 'not_found'; key: string }
  | { status: 'forbidden'; key: string; reason: string }
  | ({ status: 'invalid'; key: string } & Invalid)
