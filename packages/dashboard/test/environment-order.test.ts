import { describe, expect, it } from 'vitest'
import { followEnvironmentOrder, inOrder } from '../src/environment-order.js'
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

  it("listens to the stream's environments event of its project only, and closes", () => {
    const listeners = new Map<string, (event: MessageEvent) => void>()
    let url = ''
    let closed = false
    const heard: string[][] = []
    const stop = followEnvironmentOrder(
      'p1',
      'env 1',
      (ids) => heard.push(ids),
      (u) => {
        url = u
        return {
          addEventListener: (name: string, fn: (event: MessageEvent) => void) => listeners.set(name, fn),
          close: () => {
            closed = true
          },
        } as unknown as EventSource
      },
    )
    expect(url).toBe('/stream?environment_id=env%201')
    const send = (data: string) => listeners.get('environments')?.(new MessageEvent('environments', { data }))
    send(JSON.stringify({ project_id: 'p2', environment_ids: ['x'] }))
    send('not json')
    send(JSON.stringify({ project_id: 'p1' }))
    send(JSON.stringify({ project_id: 'p1', environment_ids: ['b', 'a'] }))
    expect(heard).toEqual([['b', 'a']])
    stop()
    expect(closed).toBe(true)
  })
})
