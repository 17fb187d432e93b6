/**
 * A pure model of the `flags` collection for the fault tests: a seeded,
 * order-sensitive workload of sync-client operations, the state they must
 * leave, and the change-log entries the store writes for one batch.
 */

export interface ModelFlag {
  key: string
  is_enabled: boolean
  rollout_percentage: number | null
  description: string | null
  rules: Array<{ attribute: string; operator: string; values: string[] }>
}

export type FlagOp =
  | { action: 'insert'; collection: 'flags'; recordId: string; record: Record<string, unknown> }
  | { action: 'update'; collection: 'flags'; recordId: string; changes: Record<string, unknown> }
  | { action: 'delete'; collection: 'flags'; recordId: string }

/** A loose operation as the client sends it (the receiver's wire shape). */
export interface WireOp {
  action: string
  collection: string
  recordId: string
  record?: Record<string, unknown>
  changes?: Record<string, unknown>
  baseRevision?: number
}

export type FlagState = Map<string, ModelFlag>

/** mulberry32: a small seeded PRNG, so a failing run can be replayed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** An insert's record with the receiver's defaults filled in. */
function normalize(recordId: string, record: Record<string, unknown>): ModelFlag {
  return {
    key: recordId,
    is_enabled: record.is_enabled as boolean,
    rollout_percentage: (record.rollout_percentage as number | null | undefined) ?? null,
    description: (record.description as string | null | undefined) ?? null,
    rules: (record.rules as ModelFlag['rules'] | undefined) ?? [],
  }
}

/** Applies one operation the way the receiver must (throws on an update of a missing flag: a 422). */
export function applyOp(state: FlagState, op: WireOp): void {
  if (op.collection !== 'flags') throw new Error(`unexpected collection ${op.collection}`)
  if (op.action === 'insert') state.set(op.recordId, normalize(op.recordId, op.record ?? {}))
  else if (op.action === 'update') {
    const current = state.get(op.recordId)
    if (!current) throw new Error(`update of missing flag ${op.recordId}`)
    state.set(op.recordId, { ...current, ...(op.changes as Partial<ModelFlag>) })
  } else if (op.action === 'delete') state.delete(op.recordId)
  else throw new Error(`unexpected action ${op.action}`)
}

/**
 * `count` operations over `keys` flags: creates, field-by-field updates whose
 * values depend on the previous value (a toggle, a rollout that steps by 17, a
 * rule list that grows), unique descriptions, replacing inserts, deletes and
 * re-inserts. Updates and deletes only target flags that exist at that point
 * (the client refuses them after a queued delete, the receiver refuses an
 * update of a missing flag). Returns the operations and the state they leave.
 */
export function flagWorkload(count: number, keys: number, seed: number): { ops: FlagOp[]; final: FlagState } {
  const random = seededRandom(seed)
  const state: FlagState = new Map()
  const ops: FlagOp[] = []
  const width = String(keys - 1).length
  for (let i = 0; i < count; i++) {
    const recordId = `ff-${String(Math.floor(random() * keys)).padStart(width, '0')}`
    const current = state.get(recordId)
    const r = random()
    let op: FlagOp
    if (!current || (r >= 0.6 && r < 0.8)) {
      const record: Record<string, unknown> =
        i % 5 === 0
          ? { key: recordId, is_enabled: r < 0.3 } // defaults for the rest
          : {
              key: recordId,
              is_enabled: r < 0.5,
              rollout_percentage: i % 3 === 0 ? null : i % 101,
              description: `${current ? 'replaced' : 'created'} by op ${i}`,
              rules: i % 4 === 0 ? [{ attribute: 'plan', operator: 'equals', values: [`p${i}`] }] : [],
            }
      op = { action: 'insert', collection: 'flags', recordId, record }
    } else if (r < 0.6) {
      let changes: Record<string, unknown>
      switch (i % 4) {
        case 0:
          changes = { is_enabled: !current.is_enabled }
          break
        case 1:
          changes = { rollout_percentage: ((current.rollout_percentage ?? 0) + 17) % 101 }
          break
        case 2:
          changes = { description: i % 10 === 2 ? null : `edited by op ${i}` }
          break
        default:
          changes = {
            rules: [...current.rules.slice(-2), { attribute: 'n', operator: 'starts_with', values: [String(i)] }],
          }
      }
      op = { action: 'update', collection: 'flags', recordId, changes }
    } else {
      op = { action: 'delete', collection: 'flags', recordId }
    }
    applyOp(state, op)
    ops.push(op)
  }
  return { ops, final: state }
}

export interface ExpectedChange {
  key: string
  /** The flag after the batch; null when it was deleted. */
  flag: ModelFlag | null
}

/**
 * Applies one batch to `state` (in place) and returns the change-log entries
 * the store writes for it in its one transaction: one per flag the batch
 * wrote (inserted, updated, or deleted while it existed), with the flag's
 * state after the batch, except flags the batch both created and deleted,
 * and flags it left exactly as they were where the receiver read them (an
 * update, a delete or an insert with a base revision of the key: a write
 * that changes nothing records nothing; a plain insert is a blind upsert).
 */
export function applyBatchToModel(state: FlagState, operations: WireOp[]): ExpectedChange[] {
  const before = new Map(state)
  const read = new Set(
    operations.filter((op) => op.action !== 'insert' || op.baseRevision !== undefined).map((op) => op.recordId),
  )
  const staged = new Map<string, ModelFlag | null>()
  for (const op of operations) {
    const exists = staged.has(op.recordId) ? staged.get(op.recordId) !== null : state.has(op.recordId)
    applyOp(state, op)
    if (op.action !== 'delete' || exists) staged.set(op.recordId, state.get(op.recordId) ?? null)
  }
  return [...staged]
    .filter(([key, flag]) => (flag === null ? before.has(key) : !(read.has(key) && sameJson(flag, before.get(key)))))
    .map(([key, flag]) => ({ key, flag: flag && { ...flag } }))
}

/** Whether two flags serialize alike, key order aside. */
function sameJson(a: ModelFlag, b: ModelFlag | undefined): boolean {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .sort(([x], [y]) => (x < y ? -1 : 1))
              .map(([k, w]) => [k, canonical(w)]),
          )
        : v
  return b !== undefined && JSON.stringify(canonical(a)) === JSON.stringify(canonical(b))
}

export const sortByKey = <T extends { key: string }>(items: T[]): T[] =>
  [...items].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
