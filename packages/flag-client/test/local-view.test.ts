import type { Operation } from '@flagsync/protocol'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { applyPending } from '../src/apply-pending.js'
import { type AckedOp, LocalView, type PendingEntry } from '../src/local-view.js'
import type { ClientFlag, FlagConflict } from '../src/types.js'

const KEYS = ['a', 'b', 'c', 'd']
const key = fc.constantFrom(...KEYS)
const flag = (k: string, on: boolean, description: string | null = null) =>
  ({ key: k, is_enabled: on, rollout_percentage: null, description, rules: [] }) as unknown as ClientFlag

const operation: fc.Arbitrary<Operation> = fc.oneof(
  fc.record({
    action: fc.constant('update' as const),
    collection: fc.constantFrom('flags', 'flags', 'flags', 'other'),
    recordId: key,
    // 500 % is refused by the patch schema: such an update changes nothing, here as at the receiver.
    changes: fc.oneof(
      fc.record({ is_enabled: fc.boolean() }),
      fc.record({ description: fc.string({ maxLength: 3 }) }),
      fc.record({ rollout_percentage: fc.constantFrom(10, 500) }),
    ),
  }),
  fc.record({
    action: fc.constant('insert' as const),
    collection: fc.constant('flags'),
    recordId: key,
    record: fc.record({ is_enabled: fc.boolean(), description: fc.constantFrom('new', null) }),
  }),
  fc.record({ action: fc.constant('delete' as const), collection: fc.constant('flags'), recordId: key }),
)

const serverSet = fc
  .uniqueArray(fc.record({ k: key, on: fc.boolean() }), { selector: (f) => f.k })
  .map((list) => new Map(list.map(({ k, on }) => [k, flag(k, on, 'server')])))

type Step =
  | { kind: 'replace'; flags: Map<string, ClientFlag> }
  | { kind: 'server'; k: string; on: boolean | null }
  | { kind: 'acked'; ops: Operation[] }
  | { kind: 'expire'; before: number }
  | { kind: 'read'; keep: boolean[]; added: Operation[]; keepLocal: boolean }
  | { kind: 'append'; op: Operation; reserved: boolean }
  | { kind: 'reserve' }
  | { kind: 'conflicts'; keys: string[] }

const step: fc.Arbitrary<Step> = fc.oneof(
  serverSet.map((flags) => ({ kind: 'replace' as const, flags })),
  fc.record({ kind: fc.constant('server' as const), k: key, on: fc.constantFrom(true, false, null) }),
  fc.record({ kind: fc.constant('acked' as const), ops: fc.array(operation, { maxLength: 3 }) }),
  fc.record({ kind: fc.constant('expire' as const), before: fc.nat({ max: 40 }) }),
  fc.record({
    kind: fc.constant('read' as const),
    keep: fc.array(fc.boolean(), { maxLength: 12 }),
    added: fc.array(operation, { maxLength: 4 }),
    keepLocal: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('append' as const), op: operation, reserved: fc.boolean() }),
  fc.constant({ kind: 'reserve' as const }),
  fc.record({ kind: fc.constant('conflicts' as const), keys: fc.subarray(KEYS) }),
)

const conflictOf = (k: string, collection = 'flags') =>
  ({ id: k.charCodeAt(0), collection, recordId: k, kind: 'field', fields: [] }) as unknown as FlagConflict

/** The view as the flag client computed it before it was incremental: everything replayed from scratch. */
function reference(
  server: Map<string, ClientFlag>,
  acked: AckedOp[],
  pending: PendingEntry[],
  conflicts: Map<string, FlagConflict>,
) {
  const ops = [...acked.map((a) => a.op), ...pending.map((e) => e.operation)]
  const view = applyPending(
    server,
    ops.filter((op) => op.collection !== 'flags' || !conflicts.has(op.recordId)),
  )
  for (const [k, conflict] of conflicts) {
    const f = server.get(k)
    if (f) view.set(k, { ...f, conflict })
  }
  return view
}

describe('LocalView', () => {
  it('property: after any sequence of changes, the per-flag view equals the full recomputation, and only reported keys change', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const view = new LocalView('flags')
        let server = new Map<string, ClientFlag>()
        let acked: AckedOp[] = []
        let pending: PendingEntry[] = []
        /** Ids queued by `append` since the last read: a read that misses them keeps them (`keepLocal`). */
        let local = new Set<number>()
        let conflicts = new Map<string, FlagConflict>()
        let nextId = 1
        const reserved: number[] = []
        let time = 0
        for (const s of steps) {
          time++
          const before = view.view
          let reported: string[]
          switch (s.kind) {
            case 'replace':
              server = s.flags
              reported = view.replaceServer(new Map(s.flags))
              break
            case 'server': {
              const f = s.on === null ? undefined : flag(s.k, s.on, 'changed')
              server = new Map(server)
              if (f) server.set(s.k, f)
              else server.delete(s.k)
              acked = acked.filter((a) => a.op.recordId !== s.k || a.op.collection !== 'flags')
              reported = view.serverChanged(s.k, f)
              break
            }
            case 'acked':
              acked = [
                ...acked,
                ...s.ops.filter((op) => op.collection === 'flags').map((op) => ({ op, ackedAt: time })),
              ]
              reported = view.addAcked(s.ops, time)
              break
            case 'expire':
              acked = acked.filter((a) => a.ackedAt >= s.before)
              reported = view.dropAcked((a) => a.ackedAt < s.before)
              break
            case 'read': {
              const read = pending.filter((e, i) => !local.has(e.id) && (s.keep[i] ?? true))
              for (const op of s.added) read.push({ id: nextId++, operation: op })
              const kept = s.keepLocal ? pending.filter((e) => local.has(e.id)) : []
              pending = [...read, ...kept].sort((x, y) => x.id - y.id)
              const keepLocal = s.keepLocal
              const localIds = local
              reported = view.setPending(read, (id) => keepLocal && localIds.has(id))
              local = new Set()
              break
            }
            case 'reserve':
              // An id handed out now whose entry arrives after later ones (queued here while another tab queued more).
              reserved.push(nextId++)
              reported = []
              break
            case 'append': {
              const id = s.reserved && reserved.length > 0 ? (reserved.shift() as number) : nextId++
              const entry = { id, operation: s.op }
              pending = [...pending, entry].sort((x, y) => x.id - y.id)
              local.add(entry.id)
              reported = view.appendPending(entry)
              break
            }
            case 'conflicts': {
              const found = [...s.keys.map((k) => conflictOf(k)), conflictOf('a', 'other')]
              conflicts = new Map(s.keys.map((k) => [k, conflictOf(k)]))
              reported = view.setConflicts(found)
              break
            }
          }
          const expected = reference(server, acked, pending, conflicts)
          expect(view.view).toEqual(expected)
          for (const k of new Set([...before.keys(), ...view.view.keys()])) {
            if (before.get(k) !== view.view.get(k)) expect(reported).toContain(k)
          }
          if (reported.length === 0) expect(view.view).toBe(before)
        }
      }),
      { numRuns: 300 },
    )
  })

  it('a new server set that reads the same (a reconnect’s bootstrap) changes nothing: no keys, the same view', () => {
    const view = new LocalView('flags')
    view.replaceServer(new Map(KEYS.map((k) => [k, flag(k, true)])))
    view.appendPending({
      id: 1,
      operation: { action: 'update', collection: 'flags', recordId: 'a', changes: { description: 'mine' } },
    })
    const before = view.view
    // New objects with the same content, fields in another order; the pending edit on top recomputes too.
    const again = new Map(KEYS.map((k) => [k, { rules: [], ...flag(k, true) } as ClientFlag]))
    expect(view.replaceServer(again)).toEqual([])
    expect(view.view).toBe(before)
    // One flag that reads differently is the one change.
    expect(view.replaceServer(new Map(KEYS.map((k) => [k, flag(k, k !== 'c')])))).toEqual(['c'])
    expect(view.view.get('a')).toMatchObject({ description: 'mine' })
  })

  it('queuing one edit replays only that flag’s operations, not the outbox', () => {
    const view = new LocalView('flags')
    view.replaceServer(new Map(KEYS.map((k) => [k, flag(k, false)])))
    const entries: PendingEntry[] = Array.from({ length: 400 }, (_, i) => ({
      id: i + 1,
      operation: {
        action: 'update',
        collection: 'flags',
        recordId: KEYS[i % 3] as string,
        changes: { is_enabled: i % 2 === 0 },
      },
    }))
    view.setPending(entries)
    const d = view.view.get('d')
    const changed = view.appendPending({
      id: 401,
      operation: { action: 'update', collection: 'flags', recordId: 'd', changes: { description: 'mine' } },
    })
    expect(changed).toEqual(['d'])
    expect(view.view.get('d')).toMatchObject({ description: 'mine' })
    expect(view.view.get('d')).not.toBe(d)
    // The other flags keep their objects: nothing was replayed for them.
    const a = view.view.get('a')
    view.appendPending({ id: 402, operation: { action: 'delete', collection: 'flags', recordId: 'd' } })
    expect(view.view.get('a')).toBe(a)
    expect(view.view.has('d')).toBe(false)
  })

  it('a cold start (an empty view, nothing on top) takes the set as the view without recomputing each flag', () => {
    const view = new LocalView('flags')
    const set = new Map(KEYS.map((k) => [k, flag(k, true)]))
    expect(view.replaceServer(set)).toEqual(KEYS)
    // The set itself, not a copy built flag by flag (2–3 ms of a cold page for 1 000 flags).
    expect(view.view).toBe(set)
    // Shared, yet never changed in place: later changes replace the maps and leave the caller's set alone.
    view.serverChanged('a', flag('a', false))
    view.appendPending({ id: 1, operation: { action: 'delete', collection: 'flags', recordId: 'b' } })
    expect(set.get('a')).toMatchObject({ is_enabled: true })
    expect(set.has('b')).toBe(true)
    expect(view.serverFlags.get('a')).toMatchObject({ is_enabled: false })
    expect(view.view.has('b')).toBe(false)
    expect(view.view).toEqual(new Map([...KEYS.filter((k) => k !== 'b').map((k) => [k, flag(k, k !== 'a')] as const)]))
    // With edits on top, a new set is recomputed per flag as before.
    const next = new Map(KEYS.map((k) => [k, flag(k, true, 'next')]))
    view.replaceServer(next)
    expect(view.view).not.toBe(next)
    expect(view.view.has('b')).toBe(false)
  })
})
