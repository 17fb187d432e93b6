import { ConfigError, createLogger, LOG_LEVELS, logLevelFromEnv } from '@flagsync/server-kit'
import { spawnServer } from '@flagsync/test-support/spawn-server'
import { describe, expect, it } from 'vitest'

describe('LOG_LEVEL', () => {
  it('is read case-insensitively, defaults to info, and a malformed one is a ConfigError naming it', () => {
    expect(logLevelFromEnv({})).toBe('info')
    expect(logLevelFromEnv({ LOG_LEVEL: '' })).toBe('info')
    expect(logLevelFromEnv({ LOG_LEVEL: ' Debug ' })).toBe('debug')
    for (const level of LOG_LEVELS) expect(logLevelFromEnv({ LOG_LEVEL: level })).toBe(level)
    expect(() => logLevelFromEnv({ LOG_LEVEL: 'foo' })).toThrow(ConfigError)
    expect(() => logLevelFromEnv({ LOG_LEVEL: 'verbose' })).toThrow(
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "verbose")',
    )
    expect(() => createLogger({ level: 'loud' })).toThrow(ConfigError)
    expect(createLogger({ level: 'warn' }).level).toBe('warn')
  })

  it.each([
    ['the flat API', 'packages/flat-api/dist/cli.js'],
    ['the flag service', 'packages/flag-service/dist/cli.js'],
    ['the receiver', 'packages/receiver/dist/cli.js'],
  ])('%s CLI refuses a malformed LOG_LEVEL in one line naming it, and exits 1', async (_name, cli) => {
    const spawned = spawnServer(cli, { LOG_LEVEL: 'foo', DATABASE_URL: 'sqlite::memory:' }, 8000)
    const error = await spawned.then(
      () => undefined,
      (e: Error) => e,
    )
    expect(error?.message).toMatch(/^process exited \(1\) before listening/)
    expect(error?.message).toMatch(/LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent/)
    const output = error?.message.split('\n').slice(1).join('\n').trim() ?? ''
    expect(output.split('\n')).toHaveLength(1)
    expect(JSON.parse(output)).toMatchObject({ level: 50, msg: expect.stringMatching(/^LOG_LEVEL must be/) })
    expect(output).not.toMatch(/ at /)
  })
})
