import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createProject, member, type Project, putFlag } from '../flags/support.js'
import type { Caller, Harness, Json } from '../harness.js'
import { startHarness } from '../harness.js'
import { POLL_MS, schedule, scheduleEntries, schedulesOf, settled } from './support.js'

type Person = { as: Caller; email: string }
const verified = (who: Person) => ({ name: who.email, verified: true })

/**
 * Schedules of one environment due together are applied in one transaction; each change's audit entry (and its
 * `flag.updated` event) still names exactly its own schedule, creator and approver.
 */
describe.each(DIALECTS)('the audit entries of schedules applied together on %s', (dialect) => {
  let h: Harness
  let p: Project
  const people: Person[] = []

  beforeAll(async () => {
    h = await startHarness(dialect, { env: { SCHEDULE_POLL_MS: String(POLL_MS) } })
    p = await createProject(h)
    for (let i = 0; i < 5; i++) people.push(await member(h, p.id, 'editor', 'editor'))
    await h.server.runtime.knex('flagsync_webhooks').insert({
      id: 'hook-flags',
      project_id: p.id,
      url: 'http://127.0.0.1:9/hook',
      events: JSON.stringify(['flag.updated']),
      description: null,
      secret: 'whsec_test',
      enabled: true,
      disabled_reason: null,
      failing_since: null,
      created_at: h.clock.now,
      updated_at: h.clock.now,
    })
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('names each change’s own schedule, creator and approver', async () => {
    const [ann, bob, cat, dan, eve] = people as [Person, Person, Person, Person, Person]
    const plan = [
      { creator: ann, approver: dan },
      { creator: bob, approver: eve },
      { creator: cat, approver: ann },
      { creator: dan, approver: undefined },
    ]
    const made: Array<{ key: string; id: number; creator: Person; approver: Person | undefined }> = []
    for (const [i, { creator, approver }] of plan.entries()) {
      const key = `together-${i}`
      await putFlag(h, p.production, { key, is_enabled: false })
      const created = await schedule(h, p.production, key, { is_enabled: true }, 1000, creator.as)
      if (approver) expect((await schedulesOf(h, p.production, approver.as).approve(created.id)).status).toBe(200)
      made.push({ key, id: created.id, creator, approver })
    }
    h.clock.advance(1000)
    for (const s of made) expect((await settled(h, p.production, s.id)).status).toBe('applied')

    // One transaction: consecutive revisions, committed at once.
    const logged = await h.server.runtime
      .knex('flagsync_changes')
      .whereIn(
        'key',
        made.map((s) => s.key),
      )
      .andWhere('scope', p.production)
      .andWhere('source', 'like', 'schedule:%')
      .orderBy('revision')
      .select('revision', 'key')
    expect(logged.map((r) => r.key)).toEqual(made.map((s) => s.key))
    const revisions = logged.map((r) => Number(r.revision))
    expect(revisions).toEqual(revisions.map((_, i) => (revisions[0] ?? 0) + i))

    for (const s of made) {
      const entries = await scheduleEntries(h, p.production, s.key)
      expect(entries).toHaveLength(1)
      expect(entries[0]).toMatchObject({ action: 'update', actor: verified(s.creator), changedFields: ['is_enabled'] })
      expect(entries[0]?.source).toEqual({
        type: 'schedule',
        id: s.id,
        createdBy: verified(s.creator),
        ...(s.approver ? { approvedBy: verified(s.approver) } : {}),
      })
    }

    const events = (
      await h.server.runtime
        .knex('flagsync_webhook_deliveries')
        .where({ webhook_id: 'hook-flags', event_type: 'flag.updated' })
        .select('payload')
    ).map((r: { payload: string }) => (JSON.parse(r.payload) as Json).data)
    for (const s of made) {
      const approval = s.approver ? ` approved by ${s.approver.email}` : ''
      expect(events.filter((e: Json) => e.flag_key === s.key)).toEqual([
        expect.objectContaining({ actor: s.creator.email, source: `schedule:${s.id}${approval}` }),
      ])
    }
  })
})
