// @vitest-environment happy-dom
// @vitest-environment-options {"settings":{"fetch":{"disableSameOriginPolicy":true}}}
import { FlagsyncProvider as FlagsyncOpenFeatureProvider } from '@flagsync/flag-client'
import {
  OpenFeature,
  OpenFeatureProvider,
  useBooleanFlagDetails,
  useBooleanFlagValue,
  useStringFlagValue,
} from '@openfeature/react-sdk'
import { cleanup, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import { closeAll, setUp } from './support.js'

afterEach(async () => {
  cleanup()
  await OpenFeature.clearProviders()
  await closeAll()
})

// The README's recipe: @openfeature/react-sdk's hooks over flagsync's OpenFeature provider.
function Checkout() {
  const on = useBooleanFlagValue('new-checkout', false)
  const rollout = useBooleanFlagDetails('rollout', false)
  const text = useStringFlagValue('new-checkout', 'not a string')
  return <p data-testid="checkout">{`${on ? 'new' : 'old'} ${rollout.value}/${rollout.reason} ${text}`}</p>
}

describe('@openfeature/react-sdk with the flagsync OpenFeature provider', () => {
  it('reads flags, evaluates with the context’s targetingKey, and re-renders when the server toggles a flag', async () => {
    const { flags, put } = await setUp([
      { key: 'new-checkout', is_enabled: false },
      { key: 'rollout', is_enabled: true, rollout_percentage: 50 },
    ])
    await flags.ready()
    const user = Array.from({ length: 50 }, (_, i) => `user-${i}`).find((id) =>
      flags.isEnabled('rollout', { user_id: id }),
    )
    if (!user) throw new Error('no user in the 50 % rollout among 50')
    await OpenFeature.setContext('react-test', { targetingKey: user })
    await OpenFeature.setProviderAndWait('react-test', new FlagsyncOpenFeatureProvider(flags))
    render(
      <OpenFeatureProvider domain="react-test">
        <Checkout />
      </OpenFeatureProvider>,
    )
    expect(screen.getByTestId('checkout').textContent).toBe('old true/SPLIT not a string')

    await put({ key: 'new-checkout', is_enabled: true })
    await expect.poll(() => screen.getByTestId('checkout').textContent).toBe('new true/SPLIT not a string')
  })
})
