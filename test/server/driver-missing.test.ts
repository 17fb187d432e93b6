import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { tempDir } from '@flagsync/test-support/temp-dir'
import { afterEach, describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))
const run = promisify(execFile)
const dirs: Array<{ remove(): void }> = []
afterEach(() => {
  for (const d of dirs.splice(0)) d.remove()
})

/** Starts a compiled CLI with `hide` made unresolvable; resolves its exit code and output. */
async function start(cli: string, hide: string, env: Record<string, string>) {
  const result = await run(process.execPath, ['--require', `${root}test/support/hide-modules.cjs`, `${root}${cli}`], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', FLAGSYNC_HIDE_MODULES: hide, ...env },
    timeout: 15_000,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: error.code,
      output: `${error.stdout ?? ''}${error.stderr ?? ''}`,
    }),
  )
  const lines = result.output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; err?: unknown })
  return { code: result.code, errors: lines.filter((l) => l.level >= 50), output: result.output }
}

const CLIS = [
  ['flat API', 'packages/flat-api/dist/cli.js'],
  ['flag service', 'packages/flag-service/dist/cli.js'],
  ['receiver', 'packages/receiver/dist/cli.js'],
] as const

describe('a server started without its database driver', () => {
  it.each(CLIS)('%s: a postgres:// DATABASE_URL without pg exits 1 saying `npm install pg`', async (_name, cli) => {
    const { code, errors, output } = await start(cli, 'pg', {
      DATABASE_URL: 'postgres://flagsync:secret@127.0.0.1:1/flags',
    })
    expect(code, output).toBe(1)
    expect(errors, output).toHaveLength(1)
    expect(errors[0]?.msg).toMatch(/pg driver is not installed: run `npm install pg`/)
    expect(errors[0]?.err).toBeUndefined() // the message is the fix: no stack trace to read through
    expect(output).not.toContain('secret')
  })

  it.each(CLIS)(
    '%s: a sqlite: DATABASE_URL without sqlite3 exits 1 saying `npm install sqlite3`',
    async (_name, cli) => {
      const dir = tempDir()
      dirs.push(dir)
      const { code, errors, output } = await start(cli, 'sqlite3', { DATABASE_URL: `sqlite:${dir.file('f.sqlite')}` })
      expect(code, output).toBe(1)
      expect(errors[0]?.msg, output).toMatch(/sqlite3 driver is not installed: run `npm install sqlite3`/)
      expect(errors[0]?.msg).toMatch(/npm install pg/) // the way out without a native build
    },
  )
})
