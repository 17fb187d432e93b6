/**
 * One rule for a flag write, whichever way it arrives: each intent runs once over REST (POST, PATCH, DELETE) and
 * once as a `/sync` operation, on two flags set up alike, as a project editor in an environment that requires
 * approval, and both must end the same way: applied, unchanged, filed as a change request, refused (403), invalid
 * (422) or a conflict (409), with the flag and the change requests alike.
 */
import { randomUUID } from 'node:crypto'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Caller, type Harness, type Json, startHarness } from '../harness.js'
import {
  changeRequestRows,
  createProject,
  member,
  type Project,
  putFlag,
  setRequireApproval,
  storeRevision,
} from './support.js'

type Outcome = 'applied' | 'unchanged' | 'filed' | 'forbidden' | 'invalid' | 'conflict'

/** A write as its sender means it; `base` true sends the revision the flag had before someone else's change. */
type Intent =
  | { action: 'put'; record: Json; base?: boolean }
  | { action: 'patch'; patch: Json; base?: boolean }
  | { action: 'delete'; base?: boolean }

const STORED = { is_enabled: false, rollout_percentage: 10 }

const CASES: Array<{ name: string; intent: Intent; outcome: Outcome }> = [
  { name: 'a patch is filed for review', intent: { action: 'patch', patch: { is_enabled: true } }, outcome: 'filed' },
  {
    name: 'a patch that changes nothing is answered unchanged, and files nothing',
    intent: { action: 'patch', patch: { rollout_percentage: 10 } },
    outcome: 'unchanged',
  },
  {
    name: 'a patch whose flag would not fit its environment is invalid, and files nothing',
    intent: { action: 'patch', patch: { prerequisites: [{ flag_key: 'nowhere', required_value: true }] } },
    outcome: 'invalid',
  },
  {
    name: 'replacing an existing flag needs the admin role',
    intent: { action: 'put', record: { is_enabled: true, description: 'replaced' } },
    outcome: 'forbidden',
  },
  {
    name: 'replacing a flag with itself is answered unchanged',
    intent: { action: 'put', record: STORED },
    outcome: 'unchanged',
  },
  { name: 'deleting needs the admin role', intent: { action: 'delete' }, outcome: 'forbidden' },
  {
    name: 'a patch of a field others changed since its base is a conflict',
    intent: { action: 'patch', patch: { rollout_percentage: 50 }, base: true },
    outcome: 'conflict',
  },
]

describe.each(DIALECTS)('one flag write rule over REST and /sync on %s', (dialect) => {
  let h: Harness
  let p: Project
  let editor: { as: Caller }
  let n = 0

  beforeAll(async () => {
    h = await startHarness(dialect)
    p = await createProject(h)
    editor = await member(h, p.id, 'editor', 'editor')
    await setRequireApproval(h, p, p.staging, true)
  })
  afterAll(async () => {
    await h?.dispose()
  })

  /** A stored flag; with `base`, its revision before an admin changed its rollout (a POST: admins replace). */
  async function prepare(withBase: boolean | undefined): Promise<{ key: string; base: number }> {
    const key = `same-rule-${++n}`
    await putFlag(h, p.staging, { key, ...STORED })
    const base = await storeRevision(h.server.runtime.knex, p.staging, key)
    if (withBase) await putFlag(h, p.staging, { key, ...STORED, rollout_percentage: 30 })
    return { key, base }
  }

  async function overRest(key: string, base: number, intent: Intent) {
    const headers: Record<string, string> = intent.base ? { 'If-Match': `"${base}"` } : {}
    const path = `/api/environments/${p.staging}/flags`
    if (intent.action === 'put') {
      return h.call(path, { method: 'POST', as: editor.as, body: { ...intent.record, key }, headers })
    }
    if (intent.action === 'patch') {
      return h.call(`${path}/${key}`, { method: 'PATCH', as: editor.as, body: intent.patch, headers })
    }
    return h.call(`${path}/${key}`, { method: 'DELETE', as: editor.as, headers })
  }

  async function overSync(key: string, base: number, intent: Intent) {
    const op: Json = { action: intent.action === 'put' ? 'insert' : intent.action === 'patch' ? 'update' : 'delete' }
    Object.assign(op, { collection: 'flags', recordId: key }, intent.base ? { baseRevision: base } : {})
    if (intent.action === 'put') op.record = intent.record
    if (intent.action === 'patch') op.changes = intent.patch
    return h.call(`/api/environments/${p.staging}/sync`, {
      method: 'POST',
      as: editor.as,
      body: { batchId: randomUUID(), operations: [op] },
    })
  }

  /** How a write ended, from its answer and what it left: the flag (its revision) and the change requests. */
  async function outcomeOf(answer: { status: number; body: Json }, key: string, revision: number, filed: number) {
    const now = await storeRevision(h.server.runtime.knex, p.staging, key)
    const requests = (await changeRequestRows(h)).length - filed
    const byStatus: Record<number, Outcome> = { 202: 'filed', 403: 'forbidden', 409: 'conflict', 422: 'invalid' }
    let outcome = byStatus[answer.status]
    if (answer.status === 200) outcome = requests > 0 ? 'filed' : now === revision ? 'unchanged' : 'applied'
    return { outcome, flagChanged: now !== revision, requests, conflicts: answer.body?.conflicts?.length ?? 0 }
  }

  async function run(intent: Intent, over: typeof overRest) {
    const { key, base } = await prepare(intent.base)
    const revision = await storeRevision(h.server.runtime.knex, p.staging, key)
    const filed = (await changeRequestRows(h)).length
    const answer = await over(key, base, intent)
    return { ...(await outcomeOf(answer, key, revision, filed)), answer: answer.body }
  }

  for (const { name, intent, outcome } of CASES) {
    it(`${name}, over both`, async () => {
      const rest = await run(intent, overRest)
      const sync = await run(intent, overSync)
      const { answer: restAnswer, ...restOutcome } = rest
      const { answer: syncAnswer, ...syncOutcome } = sync
      expect(restOutcome.outcome, JSON.stringify(restAnswer)).toBe(outcome)
      expect(syncOutcome, JSON.stringify(syncAnswer)).toEqual(restOutcome)
      expect(restOutcome.requests).toBe(outcome === 'filed' ? 1 : 0)
    })
  }

  it('a filed patch is the same change request either way', async () => {
    const rest = await run({ action: 'patch', patch: { is_enabled: true } }, overRest)
    const sync = await run({ action: 'patch', patch: { is_enabled: true } }, overSync)
    const rows = (await changeRequestRows(h)) as Array<{ flag_key: string; patch: string; status: string }>
    const [fromRest, fromSync] = rows.slice(-2)
    expect(rest.outcome).toBe('filed')
    expect(sync.outcome).toBe('filed')
    expect(JSON.parse(fromRest?.patch ?? '')).toEqual(JSON.parse(fromSync?.patch ?? ''))
    expect([fromRest?.status, fromSync?.status]).toEqual(['pending', 'pending'])
  })
})
