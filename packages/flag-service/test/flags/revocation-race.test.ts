/**
 * A write racing the revocation of its own access: the credential was valid
 * when the request was authenticated, and is revoked while the write waits for
 * the store's write lock. Such a write must change nothing (401/403/404), never
 * land after the revocation under a name that no longer resolves. Every write
 * and every revocation serialize on one lock, so the change log orders them:
 * no change made with the credential may come after the change that revoked it.
 */

import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, describe, expect, it } from 'vitest'
import { bearer, type Caller, type Harness, startHarness } from '../harness.js'
import { createProject, keyHeader, member, putFlag, sdkKeyFor, unique } from './support.js'

const WRITERS = 8
const ROUNDS = 4

interface Revocable {
  as: Caller | { headers: Record<string, string> }
  revoke(): Promise<number>
  /** The `what` of the access change-log row the revocation writes. */
  what: string
}

describe.each(DIALECTS)('writes racing the revocation of their own access on %s', (dialect) => {
  const harnesses: Harness[] = []
  afterEach(async () => {
    for (const h of harnesses.splice(0).reverse()) await h.dispose()
  })

  /** Revision of the newest access change-log row whose JSON names `what`. */
  async function revokedAt(h: Harness, what: string): Promise<number> {
    const rows = (await h.server.runtime
      .knex('flagsync_changes')
      .where('scope', 'access')
      .orderBy('revision', 'desc')
      .select('revision', 'data')) as Array<{ revision: number | string; data: string | null }>
    const row = rows.find((r) => r.data !== null && (JSON.parse(r.data) as { what: string }).what === what)
    expect(row, `an access change for ${what}`).toBeDefined()
    return Number(row?.revision)
  }

  type Setup = (h: Harness, projectId: string, environmentId: string) => Promise<Revocable>
  const kinds: Record<string, Setup> = {
    'a personal access token deleted': async (h, projectId) => {
      const user = await member(h, projectId, 'editor', 'editor')
      const token = await h.createToken(user.as, 'read_write')
      const listed = await h.call('/api/tokens', { as: user.as })
      const id = (listed.body as Array<{ id: number }>).at(-1)?.id
      return {
        as: bearer(token),
        what: `token:${id}`,
        revoke: async () => (await h.call(`/api/tokens/${id}`, { method: 'DELETE', as: user.as })).status,
      }
    },
    'an SDK key deleted': async (h, projectId, environmentId) => {
      const key = await sdkKeyFor(h, projectId, environmentId)
      const keys = (await h.call(`/api/projects/${projectId}/keys`, { as: h.admin })).body as Array<{ id: number }>
      const id = keys.at(-1)?.id
      return {
        as: { headers: keyHeader(key) },
        what: `sdk_key:${id}`,
        revoke: async () =>
          (await h.call(`/api/projects/${projectId}/keys/${id}`, { method: 'DELETE', as: h.admin })).status,
      }
    },
    'a session signed out': async (h, projectId) => {
      const user = await member(h, projectId, 'editor', 'editor')
      return {
        as: user.as,
        what: 'session',
        revoke: async () => (await h.call('/api/auth/logout', { method: 'POST', as: user.as })).status,
      }
    },
    'a member removed from the project': async (h, projectId) => {
      const user = await member(h, projectId, 'editor', 'editor')
      return {
        as: user.as,
        what: `member:${projectId}:${user.id}`,
        revoke: async () =>
          (await h.call(`/api/projects/${projectId}/members/${user.id}`, { method: 'DELETE', as: h.admin })).status,
      }
    },
  }

  it.each(Object.keys(kinds))('%s: nothing written with it lands after the revocation', async (kind) => {
    const h = await startHarness(dialect)
    harnesses.push(h)
    const project = await createProject(h)
    const env = project.production
    let landedBefore = 0
    let refused = 0
    for (let round = 0; round < ROUNDS; round++) {
      const access = await (kinds[kind] as Setup)(h, project.id, env)
      const key = unique('raced')
      await putFlag(h, env, { key, is_enabled: false })
      const init = (i: number) => ({
        method: 'PATCH',
        body: { description: `write ${i}` },
        ...('headers' in access.as ? { headers: access.as.headers } : { as: access.as }),
      })
      const [revoked, ...writes] = await Promise.all([
        access.revoke(),
        ...Array.from({ length: WRITERS }, (_, i) => h.call(`/api/environments/${env}/flags/${key}`, init(i))),
      ])
      expect([200, 204]).toContain(revoked)
      const at = await revokedAt(h, access.what)
      const changes = (await h.server.runtime
        .knex('flagsync_changes')
        .where({ scope: env, key })
        .orderBy('revision')
        .select('revision')) as Array<{ revision: number | string }>
      // The first change is the admin's create; every other is one of the raced writes.
      const raced = changes.slice(1).map((c) => Number(c.revision))
      expect(
        raced.filter((r) => r > at),
        'writes committed after the revocation',
      ).toEqual([])
      const ok = writes.filter((w) => w.status === 200)
      expect(ok).toHaveLength(raced.length)
      for (const w of writes) {
        if (w.status === 200) continue
        expect([401, 403, 404], JSON.stringify(w.body)).toContain(w.status)
        expect(w.body.error).toEqual(expect.any(String))
      }
      landedBefore += ok.length
      refused += writes.length - ok.length
    }
    // Both outcomes really happen across the rounds, so the race is real (not all before, not all after).
    expect(landedBefore + refused).toBe(ROUNDS * WRITERS)
    expect(refused).toBeGreaterThan(0)
  })
})
