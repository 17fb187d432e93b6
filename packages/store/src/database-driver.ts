import { createRequire } from 'node:module'
import type { DatabaseConfig } from './database-url.js'

/** The npm package knex loads for each dialect. Both are optional peer dependencies of `@flagsync/store`. */
export type DatabaseDriver = 'sqlite3' | 'pg'

/** Finds a package the way `require` would, throwing when it is not installed (Node's `require.resolve`). */
export type DriverResolver = (driver: DatabaseDriver) => string

/**
 * A DATABASE_URL needs a driver package that is not installed. Thrown by `openDatabase` before knex is
 * created, so the message names the command to run instead of knex's stack trace from inside its pool.
 */
export class DriverMissingError extends Error {
  override readonly name = 'DriverMissingError'
  readonly code = 'driver_missing'
  /** The package to install. */
  readonly driver: DatabaseDriver

  constructor(driver: DatabaseDriver, options: { cause?: unknown } = {}) {
    super(driverMissingMessage(driver), { cause: options.cause })
    this.driver = driver
  }
}

function driverFor(config: DatabaseConfig): DatabaseDriver {
  return config.dialect === 'sqlite' ? 'sqlite3' : 'pg'
}

// Resolved from this package, where npm places the peers it declares.
const defaultResolver: DriverResolver = (driver) => createRequire(import.meta.url).resolve(driver)

/** Throws a DriverMissingError unless the dialect's driver package can be found. */
export function assertDriverInstalled(config: DatabaseConfig, resolve: DriverResolver = defaultResolver): void {
  const driver = driverFor(config)
  try {
    resolve(driver)
  } catch (error) {
    throw new DriverMissingError(driver, { cause: error })
  }
}

function driverMissingMessage(driver: DatabaseDriver): string {
  if (driver === 'sqlite3') {
    return (
      'DATABASE_URL names a SQLite database, but the sqlite3 driver is not installed: run `npm install sqlite3` ' +
      '(a native module; without a prebuilt binary it builds from source with python3, make and a C++ compiler), ' +
      'or use PostgreSQL (a postgres:// DATABASE_URL and `npm install pg`)'
    )
  }
  return 'DATABASE_URL names a PostgreSQL database, but the pg driver is not installed: run `npm install pg`'
}
