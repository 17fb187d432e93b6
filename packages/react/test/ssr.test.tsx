import { renderToString } from 'react-dom/server'
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  FlagsyncProvider,
  useFlag,
  useFlagClient,
  useFlagStatus,
  useFlags,
  usePendingChanges,
  useSyncStatus,
} from '../src/index.js'

// A Node process, as a server renderer runs in: no IndexedDB and no EventSource to touch.
afterEach(() => {
  vi.unstubAllGlobals()
})

function Page() {
  const checkout = useFlag('new-checkout', false, { user_id: 'u-42' })
  const banner = useFlag('banner-text', 'Welcome')
  const flags = useFlags()
  const status = useFlagStatus()
  const sync = useSyncStatus()
  const pending = usePendingChanges()
  const client = useFlagClient()
  return (
    <main>
      <p id="checkout">{checkout ? 'new checkout' : 'old checkout'}</p>
      <p id="banner">{banner}</p>
      <p id="keys">{flags.map((f) => f.key).join(',')}</p>
      <p id="status">{`${status.state}/${status.source}/${sync === null ? 'no-sync' : sync.state}/${pending.length}/${client ? 'client' : 'no-client'}`}</p>
    </main>
  )
}

const bootstrap = [
  { key: 'new-checkout', is_enabled: true, rollout_percentage: null, description: null, rules: [] },
  { key: 'beta', is_enabled: false, rollout_percentage: null, description: null, rules: [] },
]

describe('server rendering', () => {
  it('runs where there is no IndexedDB, EventSource or window', () => {
    expect(typeof (globalThis as { indexedDB?: unknown }).indexedDB).toBe('undefined')
    expect(typeof (globalThis as { EventSource?: unknown }).EventSource).toBe('undefined')
    expect(typeof (globalThis as { window?: unknown }).window).toBe('undefined')
  })

  it('renders the bootstrap flags and opens no connection, even with url and sdkKey', () => {
    const fetchSpy = vi.fn(() => Promise.reject(new Error('no fetch on the server')))
    vi.stubGlobal('fetch', fetchSpy)
    const html = renderToString(
      <FlagsyncProvider url="https://flags.example.com/stream" sdkKey="key" bootstrap={bootstrap}>
        <Page />
      </FlagsyncProvider>,
    )
    expect(html).toContain('<p id="checkout">new checkout</p>')
    expect(html).toContain('<p id="banner">Welcome</p>') // no such flag: the fallback
    expect(html).toContain('<p id="keys">beta,new-checkout</p>')
    expect(html).toContain('<p id="status">connecting/none/no-sync/0/no-client</p>')
    expect(fetchSpy).not.toHaveBeenCalled()
  })

  it('renders the fallbacks without bootstrap flags', () => {
    const html = renderToString(
      <FlagsyncProvider url="https://flags.example.com/stream">
        <Page />
      </FlagsyncProvider>,
    )
    expect(html).toContain('<p id="checkout">old checkout</p>')
    expect(html).toContain('<p id="keys"></p>')
  })

  it('evaluates the bootstrap with the context: a 0 % rollout is off for everyone', () => {
    const html = renderToString(
      <FlagsyncProvider bootstrap={[{ ...bootstrap[0], key: 'new-checkout', is_enabled: true, rollout_percentage: 0 }]}>
        <Page />
      </FlagsyncProvider>,
    )
    expect(html).toContain('<p id="checkout">old checkout</p>')
  })

  it('a bootstrap that is not a list of flags (an error body, broken entries) renders the fallbacks, never throws', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    try {
      for (const bad of [{ error: 'invalid credentials', code: 'unauthorized' }, 'x', 5]) {
        const html = renderToString(
          <FlagsyncProvider bootstrap={bad as never}>
            <Page />
          </FlagsyncProvider>,
        )
        expect(html).toContain('<p id="checkout">old checkout</p>')
        expect(html).toContain('<p id="keys"></p>')
      }
      expect(warn).toHaveBeenCalledTimes(3)
      const html = renderToString(
        <FlagsyncProvider bootstrap={[null, 7, { key: 3 }, bootstrap[0]] as never}>
          <Page />
        </FlagsyncProvider>,
      )
      expect(html).toContain('<p id="checkout">new checkout</p>')
      expect(html).toContain('<p id="keys">new-checkout</p>')
    } finally {
      warn.mockRestore()
    }
  })

  it('a hook without a provider says what is missing', () => {
    const spy = vi.spyOn(console, 'error').mockImplementation(() => {})
    expect(() => renderToString(<Page />)).toThrow('useFlag() needs a <FlagsyncProvider> above it')
    spy.mockRestore()
  })
})
