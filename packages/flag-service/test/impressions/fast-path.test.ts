import { HttpError } from '@flagsync/server-kit'
import { describe, expect, it } from 'vitest'
import { rowsOf } from '../../src/impressions/routes.js'
import { fastImpressionRows } from '../../src/impressions/schemas.js'

// Ingest validates a batch without zod when it can (`fastImpressionRows`) and falls back on the schema
// (`rowsOf`) otherwise. The fast path must accept nothing the schema refuses and give exactly the schema's rows.

const AT = Date.UTC(2026, 0, 1)

/** What the schema makes of a batch: rows, or the 422. */
function bySchema(body: unknown): unknown {
  try {
    return rowsOf(body, AT)
  } catch (error) {
    if (error instanceof HttpError) return 'rejected'
    throw error
  }
}

function check(body: unknown): void {
  const fast = fastImpressionRows(body, AT)
  const schema = bySchema(body)
  if (fast === undefined) return // the route asks the schema: nothing to compare
  expect(schema, JSON.stringify(body)).not.toBe('rejected')
  expect(fast, JSON.stringify(body)).toEqual(schema)
}

const valid = { flag_key: 'new-checkout', user_id: 'u-1', value: 'true', context: { plan: 'pro' } }

describe('the fast validation path of ingest', () => {
  it('takes the common batches and gives the schema rows', () => {
    const batch = [
      valid,
      { flag_key: 'a', value: '' },
      { flag_key: 'A_b-9', user_id: null, value: 'variant-1', context: null, evaluated_at: null },
      { flag_key: 'x', user_id: 'ü😀', value: 'v', evaluated_at: '2026-01-02T03:04:05.678+02:00' },
      { flag_key: 'x', value: 'v', evaluated_at: '2026-01-02T03:04:05Z', context: { nested: { a: [1, 'b', null] } } },
      { flag_key: 'x', value: 'v', context: JSON.parse('{"2":1,"b":2,"1":3,"toJSON":4}') },
    ]
    expect(fastImpressionRows(batch, AT)).toBeDefined()
    check(batch)
    expect(fastImpressionRows([], AT)).toEqual([])
  })

  it('never accepts what the schema refuses, nor gives other rows for what it accepts', () => {
    const strings = [
      '',
      'a',
      'x'.repeat(100),
      'x'.repeat(101),
      'x'.repeat(256),
      'x'.repeat(257),
      'x'.repeat(512),
      'x'.repeat(513),
      'has space',
      'tab\there',
      'del\u007f',
      'lone\ud800',
      '\udc00lone',
      'pair😀',
      'ünï',
    ]
    const others = [undefined, null, 0, 1.5, true, [], {}, ['a'], { a: 1 }]
    const contexts = [
      undefined,
      null,
      {},
      { a: 1 },
      [],
      'text',
      5,
      { big: 'x'.repeat(4090) },
      { big: 'x'.repeat(4100) },
      JSON.parse('{"__proto__":{"a":1},"b":2}'),
      JSON.parse('{"constructor":5}'),
      Object.create(null),
    ]
    const times = [
      undefined,
      null,
      '2026-01-01T00:00:00Z',
      '2026-01-01T00:00:00',
      '2026-01-01',
      '1969-12-31T23:59:59Z',
      'yesterday',
      0,
      AT,
    ]
    const bodies: unknown[] = [null, 'text', {}, { 0: valid, length: 1 }]
    for (const flag_key of [...strings, ...others]) bodies.push([{ ...valid, flag_key }])
    for (const user_id of [...strings, ...others]) bodies.push([{ ...valid, user_id }])
    for (const value of [...strings, ...others]) bodies.push([{ ...valid, value }])
    for (const context of contexts) bodies.push([{ ...valid, context }])
    for (const evaluated_at of times) bodies.push([{ ...valid, evaluated_at }])
    bodies.push([{ ...valid, extra: 1 }], [JSON.parse('{"flag_key":"a","value":"v","__proto__":1}')])
    bodies.push([valid, null], [valid, [valid]], [{ value: 'v' }], [{ flag_key: 'a' }])
    for (const body of bodies) check(body)
  })
})
