import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { TestProject } from 'vitest/node'
import { type PostgresCluster, startPostgres } from './postgres.js'

/**
 * 1. Tests that spawn real server processes run the compiled dist/ files, so
 *    the build must be current (tsc -b is a no-op when nothing changed).
 * 2. Suites run against PostgreSQL as well as SQLite: use FLAGSYNC_PG_URL when
 *    given (CI starts a server), else start a throwaway cluster for this run.
 */
export default async function setup(project: TestProject): Promise<() => void> {
  const root = fileURLToPath(new URL('../..', import.meta.url))
  // `npm test` has just type-checked and built; FLAGSYNC_SKIP_BUILD=1 avoids doing it twice.
  if (process.env.FLAGSYNC_SKIP_BUILD !== '1') {
    execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-b'], { cwd: root, stdio: 'inherit' })
  }

  let cluster: PostgresCluster | undefined
  let url = process.env.FLAGSYNC_PG_URL
  if (!url) {
    cluster = await startPostgres()
    url = cluster.url
  }
  project.provide('postgresUrl', url)
  return () => cluster?.stop()
}
