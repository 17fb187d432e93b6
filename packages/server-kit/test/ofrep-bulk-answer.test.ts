import { ofrepBulk } from '@flagsync/evaluation'
import type { EvaluableFlag } from '@flagsync/protocol'
import { createOfrepRouter, type OfrepScope } from '@flagsync/server-kit'
import { describe, expect, it } from 'vitest'

const EVENTS = 'http://127.0.0.1:8080/ofrep/v1/events?key=k'

function answerer() {
  let stop = () => {}
  const router = createOfrepRouter({
    name: 'test',
    auth: (_req, _res, next) => next(),
    resolveScope: async () => {
      throw new Error('not used')
    },
    watch: () => () => {},
    onStop: (s) => {
      stop = s
    },
  })
  return { answer: router.answerBulk, stop: () => stop() }
}

/** The body the route must send: the flags of `ofrepBulk`, the version's metadata and the refresh stream. */
function expected(scope: OfrepScope, context: Record<string, unknown>): string {
  const streams = [{ type: 'sse', url: EVENTS, inactivityDelaySec: 120 }]
  return JSON.stringify({
    flags: ofrepBulk(scope.flags, context),
    metadata: { revision: scope.revision },
    eventStreams: streams,
    refreshConnections: streams,
  })
}

describe('the OFREP router bulk answer', () => {
  it('is the UTF-8 of the bulk JSON, for ASCII answers and for answers with other characters', () => {
    const { answer, stop } = answerer()
    const flags = [
      { key: 'plain', is_enabled: true },
      {
        key: 'greeting',
        is_enabled: true,
        flag_type: 'string',
        default_value: 'hello',
        rules: [{ attribute: 'country', operator: 'equals', values: ['DK'], variant: 'hej, blåbærgrød 😀' }],
      },
    ] as EvaluableFlag[]
    const scope: OfrepScope = { id: 's', flags, revision: 4 }
    // The ASCII answer first: the set's later non-ASCII answer must not be copied as Latin-1.
    for (const context of [{ country: 'US' }, { country: 'DK' }, { country: 'US' }]) {
      const body = answer(scope, context, EVENTS, undefined).body as Buffer
      expect(body.toString('utf8')).toBe(expected(scope, context))
      expect(body.length).toBe(Buffer.byteLength(expected(scope, context)))
    }
    stop()
  })

  it('lends the memory of a body to the next answer only once it is released', () => {
    const { answer, stop } = answerer()
    const flags = [
      { key: 'pro', is_enabled: true, rules: [{ attribute: 'plan', operator: 'equals', values: ['pro'] }] },
    ]
    const scope: OfrepScope = { id: 's', flags: flags as EvaluableFlag[], revision: 1 }
    const first = answer(scope, { plan: 'pro' }, EVENTS, undefined)
    const held = answer(scope, { plan: 'free' }, EVENTS, undefined)
    // Both in flight: separate memory, each body still its own answer.
    expect(held.body?.buffer).not.toBe(first.body?.buffer)
    expect(first.body?.toString()).toBe(expected(scope, { plan: 'pro' }))
    expect(held.body?.toString()).toBe(expected(scope, { plan: 'free' }))
    first.release?.()
    first.release?.() // a second call changes nothing
    const next = answer(scope, { plan: 'free' }, EVENTS, undefined)
    const another = answer(scope, { plan: 'pro' }, EVENTS, undefined)
    expect(next.body?.buffer).toBe(first.body?.buffer)
    expect(another.body?.buffer).not.toBe(first.body?.buffer)
    expect(next.body?.toString()).toBe(expected(scope, { plan: 'free' }))
    expect(another.body?.toString()).toBe(expected(scope, { plan: 'pro' }))
    expect(held.body?.toString()).toBe(expected(scope, { plan: 'free' }))
    stop()
  })

  it('answers a set whose body outgrows the memory it lends, and keeps answering after', () => {
    const { answer, stop } = answerer()
    const flags = Array.from({ length: 1500 }, (_, i) => ({
      key: `flag-${i}`,
      is_enabled: true,
      rollout_percentage: 50,
    }))
    const scope: OfrepScope = { id: 's', flags: flags as EvaluableFlag[], revision: 2 }
    for (const user_id of ['u-1', 'u-2']) {
      const bulk = answer(scope, { user_id }, EVENTS, undefined)
      expect(bulk.body?.length).toBeGreaterThan(64 * 1024)
      expect(bulk.body?.toString()).toBe(expected(scope, { user_id }))
      bulk.release?.()
    }
    stop()
  })
})
