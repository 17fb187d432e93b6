import { ConfigError, loadServiceConfig } from '@flagsync/flag-service'
import { describe, expect, it } from 'vitest'
import { LOCKOUT_POLICY, lockoutState } from '../src/auth/lockout.js'
import { hashPassword, verifyPassword } from '../src/auth/passwords.js'
import {
  displayPrefix,
  generateSecret,
  hashesEqual,
  hashSecret,
  PAT_PREFIX,
  SDK_KEY_PREFIX,
} from '../src/auth/secrets.js'
import { DEFAULT_SERVICE_DATABASE_URL } from '../src/config.js'
import { slugify } from '../src/slug.js'

const MIN = 60_000
const NOW = 1_000_000_000_000

describe('lockoutState (5 failures in 10 minutes lock for 15 minutes)', () => {
  it('counts attempts down from 5 while failures stay under the limit', () => {
    expect(lockoutState([], NOW)).toEqual({ locked: false, attemptsRemaining: 5 })
    expect(lockoutState([NOW - 3 * MIN], NOW)).toEqual({ locked: false, attemptsRemaining: 4 })
    expect(lockoutState([NOW - 4, NOW - 3, NOW - 2, NOW - 1], NOW)).toEqual({ locked: false, attemptsRemaining: 1 })
  })

  it('locks at the fifth failure within the window for 900 seconds, counting down', () => {
    const failures = [0, 1, 2, 3, 4].map((i) => NOW - 9 * MIN + i * 2 * MIN) // the fifth is at NOW - 1 min
    const fifth = NOW - MIN
    expect(lockoutState(failures, fifth)).toEqual({
      locked: true,
      retryAfterSeconds: 900,
      lockedUntil: fifth + 15 * MIN,
    })
    expect(lockoutState(failures, fifth + 1)).toMatchObject({ locked: true, retryAfterSeconds: 900 })
    expect(lockoutState(failures, fifth + 1000)).toMatchObject({ locked: true, retryAfterSeconds: 899 })
    expect(lockoutState(failures, fifth + 14 * MIN)).toMatchObject({ locked: true, retryAfterSeconds: 60 })
    expect(lockoutState(failures, fifth + 15 * MIN - 1)).toMatchObject({ locked: true, retryAfterSeconds: 1 })
  })

  it('unlocks after 15 minutes with all attempts back (the failures that locked never count again)', () => {
    const failures = [0, 1, 2, 3, 4].map((i) => NOW + i)
    expect(lockoutState(failures, NOW + 4 + 15 * MIN)).toEqual({ locked: false, attemptsRemaining: 5 })
  })

  it('does not count failures older than 10 minutes', () => {
    const old = [NOW - 10 * MIN, NOW - 11 * MIN, NOW - 12 * MIN, NOW - 13 * MIN]
    expect(lockoutState([...old, NOW], NOW)).toEqual({ locked: false, attemptsRemaining: 4 })
    // Five failures spread over more than 10 minutes never lock.
    const spread = [0, 3, 6, 9, 12].map((m) => NOW + m * MIN)
    expect(lockoutState(spread, NOW + 12 * MIN)).toEqual({ locked: false, attemptsRemaining: 1 })
  })

  it('ignores failures after now and accepts them unsorted', () => {
    expect(lockoutState([NOW + 5, NOW - 1, NOW + 6], NOW)).toEqual({ locked: false, attemptsRemaining: 4 })
    const shuffled = [NOW - 1, NOW - 5, NOW - 3, NOW - 2, NOW - 4]
    expect(lockoutState(shuffled, NOW)).toMatchObject({ locked: true, retryAfterSeconds: 900 })
  })

  it('follows a custom policy', () => {
    const policy = { maxFailures: 2, windowMs: MIN, lockMs: 2 * MIN }
    expect(lockoutState([NOW - 30_000], NOW, policy)).toEqual({ locked: false, attemptsRemaining: 1 })
    expect(lockoutState([NOW - 30_000, NOW], NOW, policy)).toMatchObject({ locked: true, retryAfterSeconds: 120 })
    expect(LOCKOUT_POLICY).toEqual({ maxFailures: 5, windowMs: 10 * MIN, lockMs: 15 * MIN })
  })
})

describe('slugify', () => {
  it.each([
    ['Mobile App', 'mobile-app'],
    ['  Café Déjà Vu! ', 'cafe-deja-vu'],
    ['Straße & Œuvre', 'strasse-oeuvre'],
    ['ÅNGSTRÖM--2024__beta', 'angstrom-2024-beta'],
    ['ｆｕｌｌｗｉｄｔｈ', 'fullwidth'],
    ['---', ''],
    ['日本語', ''],
    [`${'a'.repeat(63)} b`, 'a'.repeat(63)],
    ['x'.repeat(80), 'x'.repeat(64)],
  ])('%j → %j', (name, slug) => {
    expect(slugify(name)).toBe(slug)
  })
})

describe('passwords (scrypt)', () => {
  it('hashes with a fresh salt, verifies the right password and refuses wrong ones', async () => {
    const a = await hashPassword('s3cret-password')
    const b = await hashPassword('s3cret-password')
    expect(a).not.toBe(b)
    expect(a).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{86}$/)
    expect(a).not.toContain('s3cret-password')
    expect(await verifyPassword('s3cret-password', a)).toBe(true)
    expect(await verifyPassword('s3cret-passwore', a)).toBe(false)
    expect(await verifyPassword('', a)).toBe(false)
  })

  it('never matches a malformed stored hash', async () => {
    for (const stored of ['', 'plain', 'scrypt$1$1$1$x$y', 'bcrypt$16384$8$1$AAAA$BBBB', 'scrypt$0$8$1$AAAA$BBBB']) {
      expect(await verifyPassword('anything', stored)).toBe(false)
    }
  })
})

describe('tokens and keys at rest', () => {
  it('generates prefixed 256-bit secrets and stores only a SHA-256 plus a display prefix', () => {
    const pat = generateSecret(PAT_PREFIX)
    const key = generateSecret(SDK_KEY_PREFIX)
    expect(pat).toMatch(/^pat_[A-Za-z0-9_-]{43}$/)
    expect(key).toMatch(/^sk_live_[A-Za-z0-9_-]{43}$/)
    expect(generateSecret(PAT_PREFIX)).not.toBe(pat)
    expect(hashSecret(pat)).toMatch(/^[0-9a-f]{64}$/)
    expect(displayPrefix(key)).toBe(`${key.slice(0, 12)}…`)
    expect(displayPrefix(pat).startsWith('pat_')).toBe(true)
    expect(hashesEqual(hashSecret(pat), hashSecret(pat))).toBe(true)
    expect(hashesEqual(hashSecret(pat), hashSecret(key))).toBe(false)
    expect(hashesEqual(hashSecret(pat), 'abc')).toBe(false)
  })
})

describe('loadServiceConfig', () => {
  it('has the documented defaults', () => {
    expect(loadServiceConfig({})).toEqual({
      host: '127.0.0.1',
      port: 8788,
      databaseUrl: DEFAULT_SERVICE_DATABASE_URL,
      setup: undefined,
      corsOrigins: [],
      bodyLimit: '1mb',
      keepAliveTimeoutMs: 65_000,
      cookieSecure: 'auto',
      stream: {
        keepAliveMs: 15_000,
        pollIntervalMs: 1000,
        maxStreamBufferBytes: 1024 * 1024,
        maxStreamConnections: 10_000,
        streamRetryMs: 1000,
      },
      impressionRetention: { maxAgeMs: 30 * 86_400_000, intervalMs: 3_600_000, firstRunMs: 60_000 },
      schedulePollMs: 1000,
      staleAfterDays: 30,
      webhooks: {
        allowPrivateTargets: false,
        disableAfterMs: 86_400_000,
        timeoutMs: 10_000,
        pollMs: 1000,
        concurrency: 16,
        retryBaseMs: 5000,
        retryMaxMs: 3_600_000,
        deliveryRetentionMs: 30 * 86_400_000,
        maxResponseBytes: 4096,
      },
    })
  })

  it('reads the webhook settings and refuses malformed ones by name', () => {
    const config = loadServiceConfig({
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_DISABLE_AFTER_MS: '60000',
      WEBHOOK_TIMEOUT_MS: '500',
      WEBHOOK_POLL_MS: '20',
      WEBHOOK_CONCURRENCY: '4',
      WEBHOOK_RETRY_BASE_MS: '100',
      WEBHOOK_RETRY_MAX_MS: '1000',
      WEBHOOK_DELIVERY_RETENTION_DAYS: '0',
    })
    expect(config.webhooks).toEqual({
      allowPrivateTargets: true,
      disableAfterMs: 60_000,
      timeoutMs: 500,
      pollMs: 20,
      concurrency: 4,
      retryBaseMs: 100,
      retryMaxMs: 1000,
      deliveryRetentionMs: 0,
      maxResponseBytes: 4096,
    })
    expect(() => loadServiceConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'yes' })).toThrow(/WEBHOOK_ALLOW_PRIVATE_TARGETS/)
    expect(() => loadServiceConfig({ WEBHOOK_TIMEOUT_MS: '10s' })).toThrow(/WEBHOOK_TIMEOUT_MS/)
    expect(() => loadServiceConfig({ WEBHOOK_CONCURRENCY: '0' })).toThrow(/WEBHOOK_CONCURRENCY/)
  })

  it('reads the impression retention and refuses malformed values by name', () => {
    const config = loadServiceConfig({ IMPRESSION_RETENTION_DAYS: '7', IMPRESSION_PRUNE_INTERVAL_MINUTES: '5' })
    expect(config.impressionRetention).toEqual({ maxAgeMs: 7 * 86_400_000, intervalMs: 300_000, firstRunMs: 60_000 })
    expect(loadServiceConfig({ IMPRESSION_RETENTION_DAYS: '0' }).impressionRetention.maxAgeMs).toBe(0)
    expect(() => loadServiceConfig({ IMPRESSION_RETENTION_DAYS: '30d' })).toThrow(/IMPRESSION_RETENTION_DAYS/)
  })

  it('reads STALE_AFTER_DAYS and refuses a value that is not a whole number of days from 1 to 3650', () => {
    expect(loadServiceConfig({ STALE_AFTER_DAYS: '7' }).staleAfterDays).toBe(7)
    for (const raw of ['0', '3651', '30d', '1.5']) {
      expect(() => loadServiceConfig({ STALE_AFTER_DAYS: raw }), raw).toThrow(/STALE_AFTER_DAYS/)
    }
  })

  it('reads the stream settings and refuses malformed ones by name', () => {
    const config = loadServiceConfig({
      STREAM_KEEPALIVE_MS: '40',
      POLL_INTERVAL_MS: '200',
      STREAM_MAX_BUFFER_BYTES: '4096',
      STREAM_MAX_CONNECTIONS: '300',
      STREAM_RETRY_MS: '0',
    })
    expect(config.stream).toEqual({
      keepAliveMs: 40,
      pollIntervalMs: 200,
      maxStreamBufferBytes: 4096,
      maxStreamConnections: 300,
      streamRetryMs: 0,
    })
    expect(() => loadServiceConfig({ POLL_INTERVAL_MS: 'soon' })).toThrow(/POLL_INTERVAL_MS/)
    expect(() => loadServiceConfig({ STREAM_MAX_CONNECTIONS: '0' })).toThrow(/STREAM_MAX_CONNECTIONS/)
    expect(() => loadServiceConfig({ STREAM_RETRY_MS: 'fast' })).toThrow(/STREAM_RETRY_MS/)
  })

  it('reads the setup variables (email lowercased, name defaulting to the local part)', () => {
    const config = loadServiceConfig({
      ADMIN_EMAIL: ' Boss@Example.com ',
      ADMIN_PASSWORD: 'long enough',
      WORKSPACE_NAME: ' Acme ',
      PORT: '9000',
      COOKIE_SECURE: 'true',
      CORS_ORIGINS: 'https://a.example, https://b.example',
    })
    expect(config.setup).toEqual({
      adminEmail: 'boss@example.com',
      adminPassword: 'long enough',
      workspaceName: 'Acme',
      adminName: 'boss',
    })
    expect(config).toMatchObject({
      port: 9000,
      cookieSecure: true,
      corsOrigins: ['https://a.example', 'https://b.example'],
    })
  })

  it.each([
    [{ PORT: 'abc' }, /PORT must be an integer from 0 to 65535/],
    [{ PORT: '70000' }, /PORT must be an integer/],
    [{ PORT: '1.5' }, /PORT must be an integer/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL must start with sqlite: or postgres:\/\//],
    [{ COOKIE_SECURE: 'maybe' }, /COOKIE_SECURE must be auto, true or false/],
    [{ BODY_LIMIT: 'lots' }, /BODY_LIMIT must be a size/],
    [{ BODY_LIMIT: '0' }, /BODY_LIMIT must be a size such as 100kb or 1mb, from 1kb/],
    [{ KEEP_ALIVE_TIMEOUT_MS: '5' }, /KEEP_ALIVE_TIMEOUT_MS must be an integer from 1000/],
    [{ ADMIN_EMAIL: 'a@b.co' }, /ADMIN_EMAIL set but ADMIN_PASSWORD, WORKSPACE_NAME missing/],
    [{ ADMIN_EMAIL: 'nope', ADMIN_PASSWORD: '12345678', WORKSPACE_NAME: 'W' }, /ADMIN_EMAIL must be an email address/],
    [{ ADMIN_EMAIL: 'a@b.co', ADMIN_PASSWORD: 'short', WORKSPACE_NAME: 'W' }, /ADMIN_PASSWORD must be at least 8/],
    [
      { ADMIN_EMAIL: 'a@b.co', ADMIN_PASSWORD: '12345678', WORKSPACE_NAME: 'x'.repeat(101) },
      /WORKSPACE_NAME must be 1 to 100/,
    ],
  ])('rejects %j with a message naming the variable', (env, message) => {
    expect(() => loadServiceConfig(env)).toThrow(ConfigError)
    expect(() => loadServiceConfig(env)).toThrow(message)
  })
})
