// @vitest-environment happy-dom

import { cleanup, render, screen } from '@testing-library/react'
import { lazy } from 'react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { PageBoundary } from '../src/page-boundary.js'

afterEach(cleanup)

describe('PageBoundary', () => {
  it('shows the page once its chunk has arrived, "Loading…" until then', async () => {
    let arrive: (m: { default: () => React.ReactNode }) => void = () => undefined
    const Page = lazy(() => new Promise<{ default: () => React.ReactNode }>((resolve) => (arrive = resolve)))
    render(
      <PageBoundary>
        <Page />
      </PageBoundary>,
    )
    expect(screen.getByText('Loading…')).toBeTruthy()
    arrive({ default: () => <h1>Users</h1> })
    expect(await screen.findByRole('heading', { name: 'Users' })).toBeTruthy()
  })

  it('says the page could not be loaded, and why, when its chunk cannot be fetched', async () => {
    // React reports the caught error to the console; the alert is what the reader sees.
    const quiet = vi.spyOn(console, 'error').mockImplementation(() => undefined)
    const Page = lazy(() =>
      Promise.reject(new TypeError('Failed to fetch dynamically imported module: /assets/users-x.js')),
    )
    render(
      <>
        <p>Top bar</p>
        <PageBoundary>
          <Page />
        </PageBoundary>
      </>,
    )
    const alert = await screen.findByRole('alert')
    expect(alert.textContent).toContain(
      'This page could not be loaded: Failed to fetch dynamically imported module: /assets/users-x.js',
    )
    expect(screen.getByRole('button', { name: 'Reload' })).toBeTruthy()
    // The rest of the app stays.
    expect(screen.getByText('Top bar')).toBeTruthy()
    quiet.mockRestore()
  })
})
