import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { inject } from 'vitest'
import { tempDir } from './temp-dir.js'

export type Dialect = 'sqlite' | 'postgres'

/** Every dialect the suites run against: both, always (the global setup starts PostgreSQL). */
export const DIALECTS: Dialect[] = ['sqlite', 'postgres']

export interface TestDatabase {
  url: string
  drop(): Promise<void>
}

/** A fresh, empty database: a temp SQLite file, or a new database in the test cluster. */
export async function createTestDatabase(dialect: Dialect): Promise<TestDatabase> {
  if (dialect === 'sqlite') {
    const dir = tempDir('flagsync-db-')
    return { url: `sqlite:${dir.file('flags.sqlite')}`, drop: async () => dir.remove() }
  }
  const admin = inject('postgresUrl')
  const name = `t_${randomBytes(6).toString('hex')}`
  await withClient(admin, (c) => c.query(`CREATE DATABASE ${name}`))
  const url = admin.replace(/\/[^/]*$/, `/${name}`)
  return {
    url,
    drop: () => withClient(admin, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {}),
  }
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string
  }
}
