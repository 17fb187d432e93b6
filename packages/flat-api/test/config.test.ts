import { loadConfig } from '@flagsync/flat-api'
import { ConfigError, envByteSize } from '@flagsync/server-kit'
import { spawnServer } from '@flagsync/test-support/spawn-server'
import { describe, expect, it } from 'vitest'

describe('flat API settings', () => {
  it('BODY_LIMIT: a size from 1kb to 1gb, else a ConfigError naming it', () => {
    const load = (BODY_LIMIT?: string) => loadConfig({ BODY_LIMIT }, { port: 0 }).bodyLimit
    expect(load(undefined)).toBe('1mb')
    expect(load('')).toBe('1mb')
    expect(load('64kb')).toBe('64kb')
    expect(load(' 2MB ')).toBe('2MB')
    expect(load('1.5mb')).toBe('1.5mb')
    expect(load('4096')).toBe('4096')
    for (const bad of ['xyz', '0', '0kb', '512b', '-1mb', '2gb', '1 megabyte']) {
      expect(() => load(bad), bad).toThrow(ConfigError)
      expect(() => load(bad), bad).toThrow(
        `BODY_LIMIT must be a size such as 100kb or 1mb, from 1kb to 1gb (got ${JSON.stringify(bad)})`,
      )
    }
  })

  it('CLIENT_KEY: read beside SDK_KEY; refused without it or equal to it', () => {
    expect(loadConfig({ SDK_KEY: 'sk_1', CLIENT_KEY: 'pk_1' }, { port: 0 })).toMatchObject({
      sdkKey: 'sk_1',
      clientKey: 'pk_1',
    })
    expect(loadConfig({ SDK_KEY: 'sk_1' }, { port: 0 }).clientKey).toBeUndefined()
    expect(() => loadConfig({ CLIENT_KEY: 'pk_1' }, { port: 0 })).toThrow('CLIENT_KEY needs SDK_KEY')
    expect(() => loadConfig({ SDK_KEY: 'k', CLIENT_KEY: 'k' }, { port: 0 })).toThrow(
      'CLIENT_KEY must differ from SDK_KEY',
    )
  })

  it('envByteSize takes its own bounds', () => {
    expect(envByteSize({ X: '10b' }, 'X', '1kb', 1, 100)).toBe('10b')
    expect(() => envByteSize({ X: '101' }, 'X', '1kb', 1, 100)).toThrow(
      'X must be a size such as 100kb or 1mb, from 1b to 100b',
    )
  })

  it('the CLI refuses a malformed BODY_LIMIT in one line naming it, and exits 1', async () => {
    const error = await spawnServer('packages/flat-api/dist/cli.js', { BODY_LIMIT: 'xyz' }, 8000).then(
      () => undefined,
      (e: Error) => e,
    )
    expect(error?.message).toMatch(/^process exited \(1\) before listening/)
    const output = error?.message.split('\n').slice(1).join('\n').trim() ?? ''
    expect(output.split('\n')).toHaveLength(1)
    expect(JSON.parse(output)).toMatchObject({ level: 50, msg: expect.stringMatching(/^BODY_LIMIT must be a size/) })
  })
})
