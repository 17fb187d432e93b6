import { describe, expect, it } from 'vitest'
import { inOrder } from '../src/environment-order.js'
import { moved } from '../src/environments.js'

describe('moving an environment', () => {
  const ids = ['prod', 'staging', 'dev']
  it('swaps it with its neighbour, and stays put at either end', () => {
    expect(moved(ids, 'staging', -1)).toEqual(['staging', 'prod', 'dev'])
    expect(moved(ids, 'staging', 1)).toEqual(['prod', 'dev', 'staging'])
    expect(moved(ids, 'prod', -1)).toEqual(ids)
    expect(moved(ids, 'dev', 1)).toEqual(ids)
    expect(moved(ids, 'nope', 1)).toEqual(ids)
  })
})

describe('following the order of a project', () => {
  it('sorts by the ids it hears; unnamed ones keep their order at the end', () => {
    const envs = ['a', 'b', 'c', 'd'].map((id) => ({ id }))
    expect(inOrder(envs, ['c', 'a', 'b', 'd']).map((e) => e.id)).toEqual(['c', 'a', 'b', 'd'])
    expect(inOrder(envs, ['d', 'b']).map((e) => e.id)).toEqual(['d', 'b', 'a', 'c'])
  })
})
