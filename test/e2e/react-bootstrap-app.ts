/**
 * The page of react-bootstrap.e2e.ts: rendered to HTML by the test (as a
 * server would, with the flags it fetched), then hydrated in Chromium by the
 * bundle built from `hydratePage` with the same flags.
 */
import type { ClientFlag } from '@flagsync/flag-client'
import { FlagsyncProvider, useFlag, useFlagStatus } from '@flagsync/react'
import { createElement, type ReactNode } from 'react'

function Checkout(): ReactNode {
  const onePage = useFlag('new-checkout', false)
  const { source } = useFlagStatus()
  return createElement('p', { id: 'checkout', 'data-source': source }, onePage ? 'New checkout' : 'Classic checkout')
}

/** The app: a provider that creates its flag client from `url`, with the server's flags as `bootstrap`. */
export function Page({ url, bootstrap }: { url: string; bootstrap: ClientFlag[] }): ReactNode {
  return createElement(FlagsyncProvider, { url, bootstrap }, createElement(Checkout))
}
