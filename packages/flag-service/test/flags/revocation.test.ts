import { DIALECTS } from '@flagsync/test-support/databases'
import type { SseReader } from '@flagsync/test-support/sse-reader'
import { afterEach, describe, expect, it } from 'vitest'
import { bearer, type Caller, type Harness, type Json, startHarness } from '../harness.js'
import { bootstrapOf, createProject, keyHeader, member, openStream, sdkKeyFor } from './support.js'

const POLL_MS = 400

/** Milliseconds until the stream ends, or Infinity if it is still open after `withinMs`. */
async function endsWithin(stream: SseReader, withinMs: number, since: number): Promise<number> {
  const timeout = new Promise<'open'>((resolve) => setTimeout(() => resolve('open'), withinMs).unref())
  const outcome = await Promise.race([stream.ended.then(() => 'ended' as const), timeout])
  return outcome === 'ended' ? Date.now() - since : Number.POSITIVE_INFINITY
}

const headersOf = (caller: Caller): Record<string, string> =>
  caller.kind === 'bearer'
    ? { Authorization: `Bearer ${caller.secret}` }
    : caller.kind === 'session'
      ? { Cookie: caller.cookie }
      : {}

describe.each(DIALECTS)('revoked access ends open streams promptly on %s', (dialect) => {
  const harnesses: Harness[] = []
  const readers: SseReader[] = []
  afterEach(async () => {
    for (const r of readers.splice(0)) r.close()
    for (const h of harnesses.splice(0).reverse()) await h.dispose()
  })

  async function start(databaseUrl?: string) {
    const h = await startHarness(dialect, { databaseUrl, env: { POLL_INTERVAL_MS: String(POLL_MS) } })
    harnesses.push(h)
    return h
  }
  async function open(h: Harness, headers: Record<string, string>, query = '') {
    const stream = await openStream(h, headers, query)
    readers.push(stream)
    expect(stream.status).toBe(200)
    await bootstrapOf(stream)
    return stream
  }

  /**
   * Opens one stream per kind of access on `streamsOn`, revokes each through `revokeOn`'s routes, and
   * returns how long each took to end; a spare SDK key stream and an untouched session must stay open.
   */
  async function revokeAll(revokeOn: Harness, streamsOn: Harness, withinMs: number) {
    const p = await createProject(revokeOn)
    const spareKey = await sdkKeyFor(revokeOn, p.id, p.production)
    const doomedKey = await sdkKeyFor(revokeOn, p.id, p.production)
    const tokenUser = await member(revokeOn, p.id, 'editor', 'viewer')
    const token = await revokeOn.createToken(tokenUser.as, 'read_only')
    const tokens = (await revokeOn.call('/api/tokens', { as: tokenUser.as })).body as Json[]
    const tokenId = tokens.at(-1)?.id
    const signingOut = await member(revokeOn, p.id, 'editor', 'viewer')
    const deletedUser = await member(revokeOn, p.id, 'editor', 'viewer')
    const removedMember = await member(revokeOn, p.id, 'editor', 'viewer')
    const bystander = await member(revokeOn, p.id, 'editor', 'viewer')
    const env = `?environment_id=${p.production}`

    const streams = {
      sdkKey: await open(streamsOn, keyHeader(doomedKey)),
      token: await open(streamsOn, headersOf(bearer(token)), env),
      session: await open(streamsOn, headersOf(signingOut.as), env),
      user: await open(streamsOn, headersOf(deletedUser.as)),
      membership: await open(streamsOn, headersOf(removedMember.as), env),
    }
    const kept = [await open(streamsOn, keyHeader(spareKey)), await open(streamsOn, headersOf(bystander.as), env)]

    const keys = (await revokeOn.call(`/api/projects/${p.id}/keys`, { as: revokeOn.admin })).body as Json[]
    const doomedKeyId = keys.find((k) => doomedKey.startsWith(String(k.prefix).replace('…', '')))?.id
    const revocations: Record<keyof typeof streams, () => Promise<{ status: number }>> = {
      sdkKey: () =>
        revokeOn.call(`/api/projects/${p.id}/keys/${doomedKeyId}`, { method: 'DELETE', as: revokeOn.admin }),
      token: () => revokeOn.call(`/api/tokens/${tokenId}`, { method: 'DELETE', as: tokenUser.as }),
      session: () => revokeOn.call('/api/auth/logout', { method: 'POST', as: signingOut.as }),
      user: () => revokeOn.call(`/api/users/${deletedUser.id}`, { method: 'DELETE', as: revokeOn.admin }),
      membership: () =>
        revokeOn.call(`/api/projects/${p.id}/members/${removedMember.id}`, { method: 'DELETE', as: revokeOn.admin }),
    }
    const took: Record<string, number> = {}
    for (const [kind, revoke] of Object.entries(revocations)) {
      const since = Date.now()
      expect((await revoke()).status, kind).toBe(204)
      took[kind] = await endsWithin(streams[kind as keyof typeof streams], withinMs, since)
    }
    for (const stream of kept) expect(await endsWithin(stream, 50, Date.now())).toBe(Number.POSITIVE_INFINITY)
    return took
  }

  it('on the instance that revokes: a deleted SDK key or token, a sign-out, a deleted user or membership, within a second', async () => {
    const h = await start()
    const took = await revokeAll(h, h, 1000)
    for (const [kind, ms] of Object.entries(took)) expect(ms, kind).toBeLessThanOrEqual(1000)
  })

  it('on another instance of the same database: within the change-log poll interval', async () => {
    const a = await start()
    const b = await start(a.databaseUrl)
    // The poll interval plus the re-check's own queries.
    const bound = POLL_MS + 600
    const took = await revokeAll(a, b, bound)
    for (const [kind, ms] of Object.entries(took)) expect(ms, kind).toBeLessThanOrEqual(bound)
  })
})
