import { setTimeout as sleep } from 'node:timers/promises'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, describe, expect, it } from 'vitest'
import { SERVICE_TABLES } from '../src/tables.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, MINUTE, startHarness } from './harness.js'

/**
 * The lockout holds for simultaneous attempts, not only sequential ones: if
 * each attempt read the failure count, ran scrypt and recorded its failure
 * afterwards, 200 simultaneous logins (199 wrong, the right one last) would
 * all be checked. Admission counts the attempt in the database before the
 * hash is checked, so of any burst exactly five attempts are checked and
 * every other one gets 429.
 */

const BURST = 200

type Answer = { status: number; body: { attempts_remaining?: number; retry_after_seconds?: number } }

const login = async (h: Harness, password: string, email = ADMIN_EMAIL): Promise<Answer> => {
  const { status, body } = await h.call('/api/auth/login', { method: 'POST', body: { email, password } })
  return { status, body }
}

const tally = (answers: Answer[]) => {
  const counts: Record<number, number> = {}
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1
  return counts
}

describe.each(DIALECTS)('login lockout under concurrent attempts on %s', (dialect) => {
  const harnesses: Harness[] = []
  afterEach(async () => {
    // The second instance of a pair shares the first one's database: stop it before the first drops it.
    for (const h of harnesses.splice(0).reverse()) await h.dispose()
  })
  async function start(options: Parameters<typeof startHarness>[1] = {}) {
    const h = await startHarness(dialect, options)
    harnesses.push(h)
    return h
  }

  it(`a burst of ${BURST} wrong passwords gets a password check for exactly five: four 401s, then 429 for all the rest`, async () => {
    const h = await start()
    const answers = await Promise.all(Array.from({ length: BURST }, (_, i) => login(h, `wrong ${i}`)))
    expect(tally(answers)).toEqual({ 401: 4, 429: BURST - 4 })
    // The four 401s count down from 4 to 1, whatever order they finished in: each saw the attempts admitted before it.
    const remaining = answers.filter((a) => a.status === 401).map((a) => a.body.attempts_remaining)
    expect(remaining.sort()).toEqual([1, 2, 3, 4])
    for (const a of answers.filter((a) => a.status === 429)) expect(a.body.retry_after_seconds).toBe(900)
    // Exactly five failures were recorded: the refused attempts did not extend the lock.
    const rows = await h.server.runtime.knex(SERVICE_TABLES.loginFailures).where('email', ADMIN_EMAIL).pluck('id')
    expect(rows).toHaveLength(5)

    expect((await login(h, ADMIN_PASSWORD)).status).toBe(429)
    h.clock.advance(15 * MINUTE)
    expect((await login(h, ADMIN_PASSWORD)).status).toBe(200)
  })

  it('the right password at the end of a burst of wrong ones is refused once five failures are counted', async () => {
    const h = await start()
    const wrong = Array.from({ length: BURST - 1 }, (_, i) => login(h, `wrong ${i}`))
    // Sent last, a moment after the others, as the attacker's lucky guess would be.
    const right = sleep(20).then(() => login(h, ADMIN_PASSWORD))
    const answers = await Promise.all(wrong)
    const lucky = await right
    if (lucky.status === 200) {
      // Only when the server admitted it among the first five (requests race on their way in): the success
      // clears the failures admitted before it, so at most four before and four after it answer 401.
      expect(tally(answers)[401] ?? 0).toBeLessThanOrEqual(8)
    } else {
      expect(lucky.status).toBe(429)
      expect(tally(answers)).toEqual({ 401: 4, 429: BURST - 1 - 4 })
      expect((await login(h, ADMIN_PASSWORD)).status).toBe(429)
    }
  })

  if (dialect === 'postgres') {
    it('holds across two instances on one PostgreSQL racing each other', async () => {
      const a = await start()
      const b = await start({ databaseUrl: a.databaseUrl })
      const answers = await Promise.all(
        Array.from({ length: BURST }, (_, i) => login(i % 2 === 0 ? a : b, `wrong ${i}`)),
      )
      expect(tally(answers)).toEqual({ 401: 4, 429: BURST - 4 })
      expect((await login(a, ADMIN_PASSWORD)).status).toBe(429)
      expect((await login(b, ADMIN_PASSWORD)).status).toBe(429)
    })

    it('the right password sent to the other instance at the end of a burst is refused', async () => {
      const a = await start()
      const b = await start({ databaseUrl: a.databaseUrl })
      const wrong = Array.from({ length: BURST - 1 }, (_, i) => login(i % 2 === 0 ? a : b, `wrong ${i}`))
      const right = sleep(20).then(() => login(b, ADMIN_PASSWORD))
      const answers = await Promise.all(wrong)
      const lucky = await right
      if (lucky.status === 200) {
        expect(tally(answers)[401] ?? 0).toBeLessThanOrEqual(8)
      } else {
        expect(lucky.status).toBe(429)
        expect(tally(answers)).toEqual({ 401: 4, 429: BURST - 1 - 4 })
      }
    })
  }
})
