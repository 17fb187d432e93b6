import type { Server } from 'node:http'
import { loadReceiverConfig, startReceiverServer } from '@flagsync/receiver'
import { silentLogger } from '@flagsync/server-kit'
import { createTestDatabase, type TestDatabase } from '@flagsync/test-support/databases'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { createProject } from '../../packages/flag-service/test/flags/support.js'
import { type Harness, startHarness } from '../../packages/flag-service/test/harness.js'

/** The servers whose JSON bodies go through server-kit's jsonBody, each at one route with its limit. */

export const MIB = 1024 * 1024

export interface Target {
  name: string
  url: string
  path: string
  limit: number
  headers: Record<string, string>
  server: Server
  close(): Promise<void>
}

const cleanups: Array<() => Promise<void>> = []

/** Stops every server started since the last call (an `afterEach`). */
export async function disposeTargets(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
}

export async function flatApi(path: '/api/flags' | '/sync'): Promise<Target> {
  const server: TestServer = await startTestServer({ env: { SDK_KEY: 'k'.repeat(32) } })
  cleanups.push(() => server.dispose())
  return {
    name: `flat API ${path}`,
    url: server.url,
    path,
    limit: path === '/sync' ? 5 * MIB : MIB,
    headers: { Authorization: `Bearer ${'k'.repeat(32)}` },
    server: server.server,
    close: () => server.dispose(),
  }
}

export async function receiver(): Promise<Target> {
  const db: TestDatabase = await createTestDatabase('sqlite')
  const running = await startReceiverServer(
    loadReceiverConfig({ PORT: '0', DATABASE_URL: db.url, RECEIVER_TOKEN: 'r'.repeat(32) }),
    { logger: silentLogger() },
  )
  cleanups.push(async () => {
    await running.close()
    await db.drop()
  })
  return {
    name: 'standalone receiver /sync',
    url: running.url,
    path: '/sync',
    limit: 5 * MIB,
    headers: { Authorization: `Bearer ${'r'.repeat(32)}` },
    server: running.server,
    close: () => running.close(),
  }
}

/** The flag service at `path` (`/api/auth/login` as anyone, or an environment's route as the admin's token). */
export async function flagService(route: 'login' | 'sync' | 'flags' = 'login'): Promise<Target> {
  const h: Harness = await startHarness('sqlite')
  cleanups.push(() => h.dispose())
  let path = '/api/auth/login'
  let headers: Record<string, string> = {}
  if (route !== 'login') {
    const project = await createProject(h)
    path = `/api/environments/${project.production}/${route}`
    headers = { Authorization: `Bearer ${await h.createToken(h.admin, 'read_write')}` }
  }
  return {
    name: `flag service ${path}`,
    url: h.url,
    path,
    limit: MIB,
    headers,
    server: h.server.server,
    close: () => h.dispose(),
  }
}
