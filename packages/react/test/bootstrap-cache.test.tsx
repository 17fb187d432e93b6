// @vitest-environment happy-dom
// @vitest-environment-options {"settings":{"fetch":{"disableSameOriginPolicy":true}}}
import type { ClientFlag, FlagClientOptions, KeyValueStorage } from '@flagsync/flag-client'
import { act } from '@testing-library/react'
import { IDBKeyRange } from 'fake-indexeddb'
import { hydrateRoot, type Root } from 'react-dom/client'
import { renderToString } from 'react-dom/server'
import { afterEach, describe, expect, it } from 'vitest'
import { FlagsyncProvider, type FlagsyncProviderProps, useFlag, useFlagStatus } from '../src/index.js'
import { closeAll, type Setup, setUp } from './support.js'

// A return visit to a server-rendered page: the flag cache holds the set of the first visit, the server's flags have
// changed since, and the page hydrates with the new ones while the stream is slow. The older cached set must never
// be rendered.

let root: Root | undefined
afterEach(async () => {
  act(() => root?.unmount())
  root = undefined
  await closeAll()
})

const rendered: string[] = []

function Checkout() {
  const text = useFlag('new-checkout', false) ? 'new checkout' : 'old checkout'
  const { source } = useFlagStatus()
  rendered.push(text)
  return (
    <p id="checkout" data-source={source}>
      {text}
    </p>
  )
}

function memoryStorage(): KeyValueStorage {
  const items = new Map<string, string>()
  return {
    getItem: (k) => items.get(k) ?? null,
    setItem: (k, v) => void items.set(k, v),
    removeItem: (k) => void items.delete(k),
  }
}

/** `fetch` whose stream requests wait `ms` before they go out. */
const slowStream =
  (ms: number): typeof fetch =>
  async (input, init) => {
    if (String(input instanceof Request ? input.url : input).includes('/stream')) {
      await new Promise((resolve) => setTimeout(resolve, ms))
    }
    return fetch(input, init)
  }

/** First visit (its set saved to the cache), then the server's flag changes: the bootstrap of the second visit. */
async function returnVisit(): Promise<{
  setup: Setup
  cacheOptions: Partial<FlagClientOptions>
  bootstrap: ClientFlag[]
}> {
  const setup = await setUp([{ key: 'new-checkout', is_enabled: false }])
  const cacheOptions = { dbName: 'visit', indexedDB: setup.indexedDB, IDBKeyRange, localStorage: memoryStorage() }
  const first = setup.newFlagClient(cacheOptions)
  await expect.poll(() => first.status().source).toBe('stream')
  await first.close()
  await setup.put({ key: 'new-checkout', is_enabled: true })
  const bootstrap = (await (await setup.server.request('/api/flags')).json()) as ClientFlag[]
  return { setup, cacheOptions, bootstrap }
}

/** Hydrates the server's HTML for `props` and waits until the stream's set is rendered. */
async function hydrate(props: FlagsyncProviderProps): Promise<HTMLElement> {
  const html = renderToString(
    <FlagsyncProvider bootstrap={props.bootstrap}>
      <Checkout />
    </FlagsyncProvider>,
  )
  const container = document.createElement('div')
  container.innerHTML = html
  document.body.append(container)
  rendered.length = 0
  act(() => {
    root = hydrateRoot(
      container,
      <FlagsyncProvider {...props}>
        <Checkout />
      </FlagsyncProvider>,
    )
  })
  await expect
    .poll(() => container.querySelector('#checkout')?.getAttribute('data-source'), { timeout: 10_000 })
    .toBe('stream')
  return container
}

describe('a server-rendered page on a return visit, with a slow stream', () => {
  it('a provider-made client never renders the older cached set over the bootstrap', async () => {
    const { setup, cacheOptions, bootstrap } = await returnVisit()
    const container = await hydrate({
      url: `${setup.server.url}/stream`,
      options: { ...cacheOptions, fetch: slowStream(500) },
      bootstrap,
    })
    expect(container.textContent).toBe('new checkout')
    expect(rendered.length).toBeGreaterThan(1)
    expect(rendered.filter((text) => text !== 'new checkout')).toEqual([])
  })

  it('a client of your own, started from the older cache, shows the bootstrap until the stream', async () => {
    const { setup, cacheOptions, bootstrap } = await returnVisit()
    const client = setup.newFlagClient({ ...cacheOptions, fetch: slowStream(500) })
    expect(client.status().source).toBe('cache')
    expect(client.getFlag('new-checkout')?.is_enabled).toBe(false)
    const container = await hydrate({ client, bootstrap })
    expect(container.textContent).toBe('new checkout')
    expect(rendered.filter((text) => text !== 'new checkout')).toEqual([])
  })
})
