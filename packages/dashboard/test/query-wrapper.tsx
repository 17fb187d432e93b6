import { QueryClientProvider } from '@tanstack/react-query'
import type { ReactNode } from 'react'
import { createQueryClient } from '../src/query-client.js'

let client = createQueryClient()

/** Starts the next test from an empty cache (call it in afterEach). */
export function resetQueryClient(): void {
  client.clear()
  client = createQueryClient()
}

/** The `wrapper` of a testing-library render: a query client as the page has (`createQueryClient`). */
export function QueryWrapper(props: { children: ReactNode }) {
  return <QueryClientProvider client={client}>{props.children}</QueryClientProvider>
}
