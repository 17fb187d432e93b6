/**
 * Reading and evaluating flags in an app, two ways:
 *   1. the flag client directly: `isEnabled`, `getValue`, `evaluate`;
 *   2. the vendor-neutral OpenFeature API, with `FlagsyncProvider` behind it.
 * Both evaluate locally, from the live flag set the client keeps over the
 * server's /stream: no request per evaluation.
 *
 * Environment: FLAGSYNC_URL (default http://127.0.0.1:8787), SDK_KEY when the
 * server has one (the evaluations are then reported as impressions), FLAGSYNC_FLAGS (comma-separated keys; default all flags).
 * `--watch` keeps running and re-evaluates the flags that change.
 */
import { type ClientFlag, createFlagClient, FlagsyncProvider } from '@flagsync/flag-client'
import { OpenFeature } from '@openfeature/web-sdk'

interface User {
  user_id: string
  [attribute: string]: string
}

/** The same four users every time, so the output is easy to compare between runs. */
const USERS: readonly User[] = [
  { user_id: 'alice', country: 'NL', plan: 'pro', email: 'alice@acme.com' },
  { user_id: 'bob', country: 'US', plan: 'free', email: 'bob@example.org' },
  { user_id: 'carol', country: 'BE', plan: 'enterprise', email: 'carol@example.com' },
  { user_id: 'dave', country: 'DE', plan: 'free', email: 'dave@acme.com' },
]

const MISSING = 'no-such-flag'
const baseUrl = (process.env.FLAGSYNC_URL ?? 'http://127.0.0.1:8787').replace(/\/+$/, '')
const sdkKey = process.env.SDK_KEY || undefined
const only = (process.env.FLAGSYNC_FLAGS ?? '')
  .split(',')
  .map((k) => k.trim())
  .filter(Boolean)
const watch = process.argv.includes('--watch')

const flags = createFlagClient({
  streamUrl: `${baseUrl}/stream`,
  ...(sdkKey ? { sdkKey } : {}),
  // Node has no IndexedDB: keep the flag set in memory only.
  persist: false,
})

function describeFlag(flag: ClientFlag): string {
  const parts = [flag.is_enabled ? 'on' : 'off']
  const rollout = flag.rollout_percentage
  if (typeof rollout === 'number' && rollout < 100) parts.push(`${rollout}% rollout`)
  const rules = Array.isArray(flag.rules) ? flag.rules.length : 0
  if (rules > 0) parts.push(rules === 1 ? '1 rule' : `${rules} rules`)
  return parts.join(', ')
}

function attributes(user: User): string {
  return Object.entries(user)
    .filter(([name]) => name !== 'user_id')
    .map(([name, value]) => `${name}=${value}`)
    .join(' ')
}

const line = (user: User, value: unknown, reason: string) =>
  `  ${user.user_id.padEnd(6)} ${attributes(user).padEnd(50)} → ${String(value).padEnd(5)} (${reason})`

function keysToShow(): string[] {
  return only.length > 0 ? only : flags.allFlags().map((f) => f.key)
}

/** Section 1: the flag client. Returns the values, keyed `flag/user`, to compare with OpenFeature. */
function withFlagClient(keys: readonly string[]): Map<string, boolean> {
  const values = new Map<string, boolean>()
  console.log('\n== Flag client: flags.isEnabled(key, context) ==')
  for (const key of keys) {
    const flag = flags.getFlag(key)
    console.log(`\n${key}${flag ? `  [${describeFlag(flag)}]` : '  [not found]'}`)
    for (const user of USERS) {
      const enabled = flags.isEnabled(key, user) // the everyday call
      const { reason, errorCode } = flags.evaluate(key, user) // the same, with the why
      values.set(`${key}/${user.user_id}`, enabled)
      console.log(line(user, enabled, errorCode ? `${reason}: ${errorCode}` : reason))
    }
  }
  const fallback = flags.getValue(MISSING, USERS[0], 'fallback')
  console.log(`\n${MISSING}: flags.getValue('${MISSING}', alice, 'fallback') → ${fallback}`)
  return values
}

/** Section 2: OpenFeature. The web SDK has one static context: set it per user, then evaluate. */
async function withOpenFeature(keys: readonly string[], expected: Map<string, boolean>): Promise<number> {
  console.log('\n== OpenFeature: client.getBooleanDetails(key, false) ==')
  const client = OpenFeature.getClient()
  const results = new Map<string, string[]>()
  let disagreements = 0
  for (const user of USERS) {
    const { user_id, ...rest } = user
    await OpenFeature.setContext({ targetingKey: user_id, ...rest })
    for (const key of keys) {
      const details = client.getBooleanDetails(key, false)
      const reason = details.errorCode ? `${details.reason}: ${details.errorCode}` : (details.reason ?? 'UNKNOWN')
      const lines = results.get(key) ?? []
      lines.push(line(user, details.value, reason))
      results.set(key, lines)
      if (expected.get(`${key}/${user_id}`) !== details.value) disagreements++
    }
  }
  for (const [key, lines] of results) console.log(`\n${key}\n${lines.join('\n')}`)
  const missing = client.getBooleanDetails(MISSING, false)
  console.log(`\n${MISSING}: → ${missing.value} (${missing.reason}: ${missing.errorCode})`)
  return disagreements
}

async function report(): Promise<number> {
  const keys = keysToShow()
  const all = flags.allFlags()
  console.log(
    `${all.length} flag${all.length === 1 ? '' : 's'} on ${baseUrl}: ${all.map((f) => f.key).join(', ') || '(none)'}`,
  )
  const values = withFlagClient(keys)
  const disagreements = await withOpenFeature(keys, values)
  const total = keys.length * USERS.length
  console.log(
    disagreements === 0
      ? `\nOpenFeature and the flag client agree on all ${total} evaluations.`
      : `\nOpenFeature and the flag client disagree on ${disagreements} of ${total} evaluations.`,
  )
  return disagreements
}

/**
 * With an SDK key the client records every evaluation above as an impression
 * and sends them in the background; closing stops that, so send what is
 * queued first (the project/environment flag service charts them).
 */
async function reportImpressions(): Promise<void> {
  if (!sdkKey) return
  await flags.flushImpressions()
  const { delivered, queued, lastError } = flags.impressionStatus()
  console.log(
    queued === 0 && !lastError
      ? `\nImpressions: ${delivered} sent to ${baseUrl}.`
      : `\nImpressions: ${delivered} sent, ${queued} not sent (${lastError?.message ?? 'still queued'}).`,
  )
}

async function main(): Promise<void> {
  const timeout = setTimeout(() => {
    const { lastError } = flags.status()
    console.error(
      `No flags from ${baseUrl}/stream within 10 s${lastError ? ` (${lastError.message})` : ''}. ` +
        'Is the server running (npm start)? Set FLAGSYNC_URL, and SDK_KEY when the server has one.',
    )
    process.exit(1)
  }, 10_000)
  // A refused key will not get better by retrying: say so at once.
  const refused = new Promise<never>((_, reject) => {
    flags.subscribe((event) => {
      const error = event.type === 'status' ? event.status.lastError : null
      if (error?.status === 401 || error?.status === 403) {
        reject(
          new Error(`${baseUrl}/stream refused the SDK key (HTTP ${error.status}): set SDK_KEY to the server's key`),
        )
      }
    })
  })
  try {
    await Promise.race([flags.ready(), refused])
  } catch (error) {
    console.error(error instanceof Error ? error.message : error)
    process.exit(1)
  }
  clearTimeout(timeout)

  await OpenFeature.setProviderAndWait(new FlagsyncProvider(flags))
  const disagreements = await report()

  if (watch) {
    console.log('\nWatching for changes (Ctrl+C to stop)…')
    flags.subscribe((event) => {
      if (event.type !== 'flags') return
      console.log(`\nChanged: ${event.changedKeys.join(', ')}`)
      void report()
    })
    return
  }
  await reportImpressions()
  await OpenFeature.close()
  await flags.close()
  process.exitCode = disagreements === 0 ? 0 : 1
}

main().catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
