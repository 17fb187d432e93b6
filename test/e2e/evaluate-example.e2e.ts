/**
 * examples/evaluate against a real server process: its documented command
 * prints, for every flag and demo user, the same values and reasons as the
 * evaluator computes, through the flag client and through OpenFeature.
 */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { evaluate } from '@flagsync/evaluation'
import type { EvaluableFlag } from '@flagsync/protocol'
import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { tempDir } from '@flagsync/test-support/temp-dir'
import { afterEach, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../..', import.meta.url))

/** The example's demo users (examples/evaluate/src/main.ts). */
const USERS: Record<string, Record<string, string>> = {
  alice: { user_id: 'alice', country: 'NL', plan: 'pro', email: 'alice@acme.com' },
  bob: { user_id: 'bob', country: 'US', plan: 'free', email: 'bob@example.org' },
  carol: { user_id: 'carol', country: 'BE', plan: 'enterprise', email: 'carol@example.com' },
  dave: { user_id: 'dave', country: 'DE', plan: 'free', email: 'dave@acme.com' },
}

const FLAGS = [
  { key: 'dark-mode', is_enabled: false },
  {
    key: 'new-checkout',
    is_enabled: true,
    rollout_percentage: 25,
    rules: [{ attribute: 'country', operator: 'equals', values: ['NL', 'BE'] }],
  },
  { key: 'search-v2', is_enabled: true, rollout_percentage: 50 },
  {
    key: 'staff-tools',
    is_enabled: true,
    rules: [{ attribute: 'email', operator: 'ends_with', values: ['@acme.com'] }],
    rollout_percentage: 0,
  },
]

const servers: SpawnedServer[] = []
const dirs: Array<{ remove(): void }> = []
afterEach(() => {
  for (const s of servers.splice(0)) s.kill()
  for (const d of dirs.splice(0)) d.remove()
})

async function startServer(env: Record<string, string> = {}): Promise<SpawnedServer> {
  const dir = tempDir('flagsync-e2e-evaluate-')
  dirs.push(dir)
  const server = await spawnServer('packages/flat-api/dist/cli.js', {
    DATABASE_URL: `sqlite:${dir.file('flags.sqlite')}`,
    ...env,
  })
  servers.push(server)
  return server
}

/** `flag/user` → "value (reason)" for each section of the output. */
function parseSection(text: string): Map<string, string> {
  const results = new Map<string, string>()
  let flag = ''
  for (const line of text.split('\n')) {
    const header = /^([A-Za-z0-9_-]+)(?: {2}\[.*\])?$/.exec(line)
    if (header?.[1]) flag = header[1]
    const row = /^ {2}(\w+) .*→ (true|false)\s+\((.+)\)$/.exec(line)
    if (row) results.set(`${flag}/${row[1]}`, `${row[2]} (${row[3]})`)
  }
  return results
}

describe('examples/evaluate', () => {
  it('prints the evaluator’s value and reason for each flag and user, through the flag client and OpenFeature alike', async () => {
    const server = await startServer()
    for (const flag of FLAGS) {
      const res = await fetch(`${server.url}/api/flags`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(flag),
      })
      expect(res.status).toBe(200)
    }
    const stored = (await (await fetch(`${server.url}/api/flags`)).json()) as EvaluableFlag[]

    // The README's command.
    const { stdout } = await run('npm', ['start', '--silent', '-w', '@flagsync/example-evaluate'], {
      cwd: root,
      env: { ...process.env, FLAGSYNC_URL: server.url },
      timeout: 60_000,
    })

    const expected = new Map<string, string>()
    for (const flag of stored) {
      for (const [name, user] of Object.entries(USERS)) {
        const result = evaluate(flag, user)
        expected.set(`${flag.key}/${name}`, `${result.value === true} (${result.reason})`)
      }
    }
    // Not a vacuous table: every reason the flags above can produce shows up.
    expect(new Set([...expected.values()].map((v) => v.replace(/^\w+ /, '')))).toEqual(
      new Set(['(DISABLED)', '(TARGETING_MATCH)', '(SPLIT)']),
    )

    const [clientPart, openFeaturePart] = stdout.split('== OpenFeature')
    expect(stdout).toContain(`4 flags on ${server.url}: dark-mode, new-checkout, search-v2, staff-tools`)
    expect(parseSection(clientPart ?? '')).toEqual(expected)
    expect(parseSection(openFeaturePart ?? '')).toEqual(expected)
    expect(stdout).toContain("no-such-flag: flags.getValue('no-such-flag', alice, 'fallback') → fallback")
    expect(stdout).toContain('no-such-flag: → false (ERROR: FLAG_NOT_FOUND)')
    expect(stdout).toContain('OpenFeature and the flag client agree on all 16 evaluations.')
  })

  it('sends SDK_KEY, and fails at once with a clear message when the server refuses the key', async () => {
    const server = await startServer({ SDK_KEY: 'e2e-secret' })
    const created = await fetch(`${server.url}/api/flags`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer e2e-secret' },
      body: JSON.stringify({ key: 'dark-mode', is_enabled: true }),
    })
    expect(created.status).toBe(200)
    const script = `${root}examples/evaluate/dist/main.js`

    const ok = await run(process.execPath, [script], {
      env: { ...process.env, FLAGSYNC_URL: server.url, SDK_KEY: 'e2e-secret' },
      timeout: 30_000,
    })
    expect(parseSection(ok.stdout).get('dark-mode/bob')).toBe('true (DEFAULT)')

    const started = Date.now()
    const refused = await run(process.execPath, [script], {
      env: { ...process.env, FLAGSYNC_URL: server.url, SDK_KEY: 'wrong' },
      timeout: 30_000,
    }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    )
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(`${server.url}/stream refused the SDK key (HTTP 401)`)
    expect(Date.now() - started).toBeLessThan(5000)
  })
})
