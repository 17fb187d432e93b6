import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DriverMissingError, openDatabase } from '@flagsync/store'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'flagsync-driver-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

/** Node's own resolution from a folder without node_modules: what an app without the driver sees. */
const resolveFromEmptyFolder = () => (driver: string) => createRequire(join(dir, 'app.js')).resolve(driver)

describe('openDatabase without the driver package', () => {
  it('names `npm install sqlite3` for a sqlite: URL, before creating anything', async () => {
    const file = join(dir, 'data', 'flags.sqlite')
    const error = await openDatabase(`sqlite:${file}`, { resolveDriver: resolveFromEmptyFolder() }).catch((e) => e)
    expect(error).toBeInstanceOf(DriverMissingError)
    expect(error).toMatchObject({ code: 'driver_missing', driver: 'sqlite3' })
    expect(error.message).toContain('npm install sqlite3')
    expect(error.message).toContain('npm install pg') // the way out without a native build
    expect((error.cause as { code?: string }).code).toBe('MODULE_NOT_FOUND')
    expect(existsSync(join(dir, 'data'))).toBe(false)
  })

  it('names `npm install pg` for a postgres:// URL, without connecting', async () => {
    const error = await openDatabase('postgres://user:secret@127.0.0.1:1/flags', {
      resolveDriver: resolveFromEmptyFolder(),
    }).catch((e) => e)
    expect(error).toBeInstanceOf(DriverMissingError)
    expect(error).toMatchObject({ code: 'driver_missing', driver: 'pg' })
    expect(error.message).toContain('npm install pg')
    expect(error.message).not.toContain('secret')
  })

  it('opens the database when the default resolution finds the driver', async () => {
    const db = await openDatabase(`sqlite:${join(dir, 'flags.sqlite')}`)
    await db.close()
    expect(existsSync(join(dir, 'flags.sqlite'))).toBe(true)
  })
})
