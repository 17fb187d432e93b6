// @vitest-environment happy-dom
// @vitest-environment-options {"settings":{"fetch":{"disableSameOriginPolicy":true}}}
import { createRemoteFlagClient, type RemoteFlagClient } from '@flagsync/flag-client'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { act, cleanup, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import { FlagsyncProvider, useFlag, useFlagDetails, useFlagStatus } from '../src/index.js'

const CLIENT_KEY = 'pk-react-remote'
let server: TestServer | undefined
let flags: RemoteFlagClient | undefined

afterEach(async () => {
  cleanup()
  await flags?.close()
  await server?.dispose()
})

function Page() {
  const banner = useFlag('banner', false)
  const beta = useFlagDetails('beta', false)
  const { source } = useFlagStatus()
  return <p data-testid="page">{`banner ${banner} beta ${beta.value}/${beta.reason} from ${source}`}</p>
}

describe('FlagsyncProvider with a remote-evaluation client', () => {
  it('renders the values of the client’s context, a REST toggle, and a context change', async () => {
    server = await startTestServer({ sdkKey: 'sk-react-remote', clientKey: CLIENT_KEY })
    const put = (flag: Record<string, unknown>) => server?.request('/api/flags', { method: 'POST', body: flag })
    await put({ key: 'banner', is_enabled: true })
    await put({
      key: 'beta',
      is_enabled: true,
      rollout_percentage: 0,
      rules: [{ attribute: 'country', operator: 'equals', values: ['DE'] }],
    })
    const client = createRemoteFlagClient({
      baseUrl: server.url,
      clientKey: CLIENT_KEY,
      context: { user_id: 'u-1', country: 'DE' },
      storage: null,
    })
    flags = client
    render(
      <FlagsyncProvider client={client}>
        <Page />
      </FlagsyncProvider>,
    )
    const text = () => screen.getByTestId('page').textContent
    await expect.poll(text).toBe('banner true beta true/TARGETING_MATCH from snapshot')

    await server.request('/api/flags/banner', { method: 'PATCH', body: { is_enabled: false } })
    await expect.poll(text, { timeout: 10_000 }).toBe('banner false beta true/TARGETING_MATCH from snapshot')

    await act(() => client.setContext({ user_id: 'u-1', country: 'FR' }))
    expect(text()).toBe('banner false beta false/SPLIT from snapshot')
  })
})
