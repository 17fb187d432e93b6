import type { SseReader } from '@flagsync/test-support/sse-reader'
import fc from 'fast-check'
import { expect } from 'vitest'
import { byKey, type RawResponse, type ReliabilityServer, rawRequest, replayStream } from './harness.js'

/** A few keys, so PATCH, DELETE and replaced flags hit existing ones often. */
const KEYS = ['k0', 'k1', 'k2', 'k3', 'k4', 'dark-mode', 'A_b-9'] as const
export const validKey = fc.constantFrom(...KEYS)

/** Strings that have broken servers before: line breaks (SSE framing), NUL, lone surrogates, SQL, huge. */
export const nastyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({
    unit: fc.constantFrom('\n', '\r', '\r\n', '\0', '\u2028', '\u2029', '\ud800', '\udfff', '😀', ':', 'a', ' '),
    maxLength: 30,
  }),
  fc.constantFrom(
    '',
    '\n\ndata: {"type":"DELETE","key":"k0"}\n\n',
    'event: connected\ndata: true\n\n',
    "'; DROP TABLE flagsync_flags; --",
    "k0' OR '1'='1",
    '__proto__',
    'constructor',
    '\u0000\u0001\u001f\u007f',
    '\ufeffBOM',
    'x'.repeat(10_001), // one over the description limit
    'y'.repeat(10_000), // exactly at it
  ),
)

export const anyValue = fc.oneof(
  { depthSize: 'small' },
  fc.anything({ maxDepth: 3 }),
  nastyString,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
)

const ruleLike = fc.oneof(
  fc.record({
    attribute: fc.oneof(fc.constantFrom('plan', 'country'), nastyString),
    operator: fc.oneof(fc.constantFrom('equals', 'not_equals', 'contains', 'starts_with', 'ends_with'), anyValue),
    values: fc.oneof(fc.array(nastyString, { maxLength: 3 }), anyValue),
  }),
  anyValue,
)

const fields = {
  key: fc.oneof(validKey, validKey, nastyString, anyValue),
  is_enabled: fc.oneof(fc.boolean(), fc.boolean(), anyValue),
  rollout_percentage: fc.oneof(fc.integer({ min: -5, max: 105 }), fc.constant(null), anyValue),
  description: fc.oneof(nastyString, fc.constant(null), anyValue),
  rules: fc.oneof(fc.array(ruleLike, { maxLength: 3 }), anyValue),
}

/** Flag-shaped objects whose every field may be missing, valid, of the wrong type or hostile. */
export const flagLike = fc
  .tuple(
    fc.record(fields, { requiredKeys: [] }),
    fc.dictionary(fc.oneof(nastyString, fc.constantFrom('is_enable', '__proto__', 'env_id')), anyValue, {
      maxKeys: 2,
    }),
    fc.boolean(),
  )
  .map(([flag, extra, addExtra]) => (addExtra ? { ...flag, ...extra } : flag))

/** Mostly valid flags with hostile text where text is allowed: these are accepted and must stream intact. */
export const validFlag = fc.record(
  {
    key: validKey,
    is_enabled: fc.boolean(),
    rollout_percentage: fc.oneof(fc.integer({ min: 0, max: 100 }), fc.constant(null)),
    description: fc.oneof(
      nastyString.filter((s) => s.length <= 10_000),
      fc.constant(null),
    ),
    rules: fc.array(
      fc.record({
        attribute: fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }),
        operator: fc.constantFrom('equals', 'not_equals', 'contains', 'starts_with', 'ends_with'),
        values: fc.array(fc.string({ unit: 'binary', maxLength: 20 }), { minLength: 1, maxLength: 3 }),
      }),
      { maxLength: 2 },
    ),
  },
  { requiredKeys: ['key', 'is_enabled'] },
)

/** Raw JSON text the client library would never produce. */
export const hostileJsonText = fc.oneof(
  fc.json({ maxDepth: 4 }),
  fc.integer({ min: 1, max: 10_000 }).map((n) => '['.repeat(n) + ']'.repeat(n)), // deep nesting
  fc.integer({ min: 1, max: 10_000 }).map((n) => '['.repeat(n)), // deep and unterminated
  fc.integer({ min: 1, max: 3_000 }).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`),
  fc
    .tuple(validKey, fc.boolean(), anyValue)
    .map(([key, on, first]) => `{"key":${JSON.stringify(first) ?? 'null'},"key":"${key}","is_enabled":${on}}`),
  fc.constantFrom(
    '',
    ' ',
    'null',
    'true',
    '0',
    '"k0"',
    '{',
    '{"key":"k0",',
    '{"key":"k0","is_enabled":true}garbage',
    '{"key":"k0","is_enabled":true,}',
    "{'key':'k0'}",
    '{"key":"k0","is_enabled":tru}',
    '\ufeff{"key":"k0","is_enabled":true}',
    '{"__proto__":{"is_enabled":true},"key":"k0"}',
    '{"constructor":{"prototype":{"polluted":true}},"key":"k0","is_enabled":true}',
    '{"key":"k0","is_enabled":true,"description":"\\ud800"}',
    '{"key":"k0","is_enabled":true,"description":"\\u0000"}',
    '{"key":"k\\u0000","is_enabled":true}',
    '[1,2,3]',
    '1e999999',
    '-',
  ),
)

/** Bodies above `limit` bytes (a JSON object with a long string, so only the size is wrong). */
export const oversized = (limit: number) =>
  fc
    .integer({ min: limit + 1, max: limit + 100_000 })
    .map((n) => `{"key":"k0","is_enabled":true,"pad":"${'p'.repeat(n)}"}`)

export const wrongContentType = fc.constantFrom(
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'text/event-stream',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/jsonp',
  '',
)

/** Percent-encodes every byte of the UTF-8 form (lone surrogates become U+FFFD, as a browser would send). */
function encodePath(segment: string): string {
  let out = ''
  for (const byte of Buffer.from(segment, 'utf8')) {
    const c = String.fromCharCode(byte)
    out += /[A-Za-z0-9_-]/.test(c) ? c : `%${byte.toString(16).padStart(2, '0').toUpperCase()}`
  }
  return out
}

export const pathSegment = fc.oneof(
  validKey,
  nastyString.map(encodePath),
  fc.constantFrom('%', '%E0%A4%A', '%ZZ', '%00', '%2e%2e', '..%2F..%2Fetc', '%C0%AF', '%ED%A0%80', 'x'.repeat(5000)),
)

export interface FuzzRequest {
  method: string
  path: string
  contentType?: string
  /** Omitted: no body at all. */
  body?: string | Buffer
}

interface Observed {
  status: number
  revision: number
  list: string
  etag: string | null
}

/** Sends a request exactly as generated (raw socket, so no client library fixes anything up). */
async function send(server: ReliabilityServer, req: FuzzRequest): Promise<RawResponse> {
  const body = req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body, 'utf8')
  let head = `${req.method} ${req.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n`
  if (server.config.sdkKey) head += `Authorization: Bearer ${server.config.sdkKey}\r\n`
  if (req.contentType !== undefined) head += `Content-Type: ${req.contentType}\r\n`
  if (body !== undefined) head += `Content-Length: ${body.length}\r\n`
  const bytes = Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), body ?? Buffer.alloc(0)])
  return rawRequest(server.url, bytes, 15_000)
}

async function observe(server: ReliabilityServer): Promise<Omit<Observed, 'status'>> {
  const res = await server.request('/api/flags')
  const meta = await server.runtime.db.knex('flagsync_meta').where('name', 'revision').first('value')
  return { revision: Number(meta?.value ?? 0), list: await res.text(), etag: res.headers.get('etag') }
}

/**
 * The per-request invariant: never a 5xx; a rejection (4xx) changes neither the database revision nor the
 * served list. Returns the response so callers can check more.
 */
export async function expectSafe(server: ReliabilityServer, req: FuzzRequest): Promise<RawResponse> {
  const before = await observe(server)
  const res = await send(server, req)
  const context = `${req.method} ${req.path.slice(0, 80)} ${req.contentType ?? '(no type)'} ${String(req.body ?? '(no body)').slice(0, 200)}`
  expect(res.status, `${context} -> ${res.status} ${res.body.slice(0, 300)}`).toBeGreaterThanOrEqual(200)
  expect(res.status, `${context} -> ${res.status} ${res.body.slice(0, 300)}`).toBeLessThan(500)
  if (res.status >= 400) {
    const after = await observe(server)
    expect(after, `${context} was rejected (${res.status}) but changed the store`).toEqual(before)
    if (res.headers['content-type']?.startsWith('application/json')) {
      const body = JSON.parse(res.body) as { error?: unknown; code?: unknown }
      expect(typeof body.error).toBe('string')
      expect(typeof body.code).toBe('string')
    }
  }
  return res
}

/**
 * After a run: the stream subscriber opened on the empty database received exactly the committed changes
 * (revision ids 1..n, nothing for rejected requests), every event parses, and replaying them gives the list
 * the server serves, which is also what the database holds.
 */
export async function expectStreamMatchesStore(server: ReliabilityServer, stream: SseReader): Promise<void> {
  const { revision, rows } = await server.runtime.store.loadAll('')
  if (revision > 0) await stream.waitFor((e) => Number(e.id) === revision, 10_000)
  const { flags, revisions } = replayStream(stream.events)
  expect(revisions).toEqual(Array.from({ length: revision }, (_, i) => i + 1))
  const served = JSON.parse(await (await server.request('/api/flags')).text())
  expect(byKey(flags)).toEqual(served)
  // The API adds each flag's read-only revision to what the store holds.
  expect(rows.map((r) => ({ ...r.flag, revision: r.revision }))).toEqual(served)
  // The raw text holds only well-formed events and comments: no stray line came out of a flag's text.
  for (const line of stream.raw().split(/\r\n|\r|\n/)) {
    expect(line === '' || /^(event|data|id|retry): /.test(line) || line.startsWith(':'), JSON.stringify(line)).toBe(
      true,
    )
  }
  expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  expect(({} as Record<string, unknown>).is_enabled).toBeUndefined()
}

/**
 * fast-check settings: a fixed budget per property (FUZZ_RUNS overrides it for a longer local hunt) and
 * FUZZ_SEED to replay a failure. No shrinking: the server's state moves on between runs, and the failing
 * request is printed in full by `expectSafe`.
 */
export function runs(numRuns: number): fc.Parameters<unknown> {
  const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined
  const override = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : undefined
  return { numRuns: override ?? numRuns, ...(seed === undefined ? {} : { seed }), endOnFailure: true }
}

/** Generous on a loaded 2-core CI machine; a FUZZ_RUNS hunt gets time in proportion. */
export const FUZZ_TIMEOUT_MS = process.env.FUZZ_RUNS ? Math.max(60_000, Number(process.env.FUZZ_RUNS) * 50) : 60_000
