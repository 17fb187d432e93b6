// @vitest-environment happy-dom
// @vitest-environment-options {"settings":{"fetch":{"disableSameOriginPolicy":true}}}
import type { FlagClient } from '@flagsync/sync-client'
import { act } from '@testing-library/react'
import { hydrateRoot, type Root } from 'react-dom/client'
import { renderToString } from 'react-dom/server'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { FlagsyncProvider, useFlag, useFlags } from '../src/index.js'
import { closeAll, setUp } from './support.js'

let root: Root | undefined
afterEach(async () => {
  act(() => root?.unmount())
  root = undefined
  await closeAll()
})

const rendered: string[] = []

function Checkout() {
  const on = useFlag('new-checkout', false)
  const keys = useFlags()
    .map((f) => f.key)
    .join(',')
  const text = `${on ? 'new checkout' : 'old checkout'} [${keys}]`
  rendered.push(text)
  return <p id="checkout">{text}</p>
}

function App({
  client,
  bootstrap,
}: {
  client?: FlagClient
  bootstrap: Parameters<typeof FlagsyncProvider>[0]['bootstrap']
}) {
  return (
    <FlagsyncProvider client={client} bootstrap={bootstrap}>
      <Checkout />
    </FlagsyncProvider>
  )
}

describe('hydration with bootstrap flags', () => {
  it('renders the server HTML first, without mismatch or flash, then follows the live client', async () => {
    const { server, put, newFlagClient } = await setUp([{ key: 'new-checkout', is_enabled: true }])
    // What a server would do: fetch the flags, render with them, and embed them in the page for the client.
    const bootstrap = await (await server.request('/api/flags')).json()
    const html = renderToString(<App bootstrap={bootstrap} />)
    expect(html).toBe('<p id="checkout">new checkout [new-checkout]</p>')

    const container = document.createElement('div')
    container.innerHTML = html
    document.body.append(container)
    rendered.length = 0
    const errors = vi.spyOn(console, 'error')
    const recoverable: unknown[] = []
    // The client has no flag set yet (nothing cached, the stream still connecting) when hydration runs.
    const flags = newFlagClient({ dbName: 'hydration' })
    expect(flags.status().source).toBe('none')
    act(() => {
      root = hydrateRoot(container, <App client={flags} bootstrap={bootstrap} />, {
        onRecoverableError: (error) => recoverable.push(error),
      })
    })
    expect(container.innerHTML).toBe(html)
    expect(rendered[0]).toBe('new checkout [new-checkout]')

    await flags.ready()
    await put({ key: 'new-checkout', is_enabled: false })
    await expect.poll(() => container.textContent).toBe('old checkout [new-checkout]')
    expect(recoverable).toEqual([])
    expect(errors).not.toHaveBeenCalled()
    // Bootstrap until the client had its own set, then the server's change: never the fallback with no flags.
    expect(rendered.filter((text) => text.endsWith('[]'))).toEqual([])
    expect(new Set(rendered)).toEqual(new Set(['new checkout [new-checkout]', 'old checkout [new-checkout]']))
  })

  it('without bootstrap flags, hydrates the fallbacks the server rendered, then shows the client’s flags', async () => {
    const { flags } = await setUp([{ key: 'new-checkout', is_enabled: true }])
    const html = renderToString(<App bootstrap={undefined} />)
    expect(html).toBe('<p id="checkout">old checkout []</p>')
    const container = document.createElement('div')
    container.innerHTML = html
    document.body.append(container)
    const recoverable: unknown[] = []
    act(() => {
      root = hydrateRoot(container, <App client={flags} bootstrap={undefined} />, {
        onRecoverableError: (error) => recoverable.push(error),
      })
    })
    await expect.poll(() => container.textContent).toBe('new checkout [new-checkout]')
    expect(recoverable).toEqual([])
  })
})
