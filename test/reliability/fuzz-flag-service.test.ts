import { DIALECTS } from '@flagsync/test-support/databases'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createProject, type Project } from '../../packages/flag-service/test/flags/support.js'
import { type Harness, startHarness } from '../../packages/flag-service/test/harness.js'
import {
  anyValue,
  FUZZ_TIMEOUT_MS,
  flagLike,
  hostileJsonText,
  nastyString,
  runs,
  wrongContentType,
} from './fuzz-support.js'
import { type RawResponse, rawRequest } from './harness.js'

/**
 * Hostile input at every JSON route of the flag service, as fuzz-flags-api
 * does for the flat API: never a 5xx, every error a JSON `{error, code}`, and
 * a rejected request changes nothing, including a `default_value` nested
 * 2 000 deep (which would overflow zod's recursive JSON schema).
 */

/** A JSON value nested `depth` levels, as text (JSON.stringify cannot reach the deepest ones). */
const deepText = (depth: number, open: '[' | '{"a":' = '[') =>
  open === '[' ? `${'['.repeat(depth)}1${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`

const json = (value: unknown) => JSON.stringify(value) ?? 'null'

/** Flag-service flag shapes: typed values of any JSON (deep ones too), variants, prerequisites, segment rules. */
const serviceFlagText = fc
  .record(
    {
      key: fc.oneof(fc.constantFrom('f0', 'f1', 'f2'), nastyString),
      is_enabled: fc.oneof(fc.boolean(), anyValue),
      flag_type: fc.oneof(fc.constantFrom('boolean', 'string', 'integer', 'json'), anyValue),
      variants: fc.oneof(fc.array(fc.record({ value: anyValue, weight: fc.integer() }), { maxLength: 3 }), anyValue),
      prerequisites: fc.oneof(fc.array(fc.record({ flag_key: nastyString, required_value: anyValue })), anyValue),
      rules: fc.oneof(fc.array(fc.record({ segment_key: nastyString, variant: anyValue })), anyValue),
    },
    { requiredKeys: [] },
  )
  .chain((flag) =>
    fc
      .oneof(
        anyValue.map(json),
        fc.integer({ min: 1, max: 5_000 }).map((n) => deepText(n)),
        fc.integer({ min: 1, max: 3_000 }).map((n) => deepText(n, '{"a":')),
      )
      .map((value) => `{${json(flag).slice(1, -1)}${Object.keys(flag).length > 0 ? ',' : ''}"default_value":${value}}`),
  )

/** Valid json flags but for a value of random depth: these reach the schema's recursive JSON check. */
const jsonFlagText = fc
  .tuple(fc.constantFrom('f0', 'f1', 'f2'), fc.integer({ min: 1, max: 5_000 }), fc.boolean())
  .map(
    ([key, depth, arrays]) =>
      `{"key":"${key}","is_enabled":true,"flag_type":"json","default_value":${deepText(depth, arrays ? '[' : '{"a":')}}`,
  )

const bodyText = fc.oneof(
  jsonFlagText,
  hostileJsonText,
  flagLike.map(json),
  serviceFlagText,
  fc.object({ maxDepth: 3 }).map(json),
  fc
    .record({ name: nastyString, email: nastyString, password: nastyString, role: nastyString }, { requiredKeys: [] })
    .map(json),
)

interface Ids {
  project: Project
  token: string
}

/** Every route of the service that reads a JSON body, with the ids of a real project filled in. */
const routes = (ids: Ids): Array<[method: string, path: string, auth: string]> => {
  const { project, token } = ids
  const env = `/api/environments/${project.production}`
  const proj = `/api/projects/${project.id}`
  const user = `Bearer ${token}`
  return [
    ['POST', '/api/auth/login', ''],
    ['POST', '/api/users', user],
    ['POST', '/api/tokens', user],
    ['POST', '/api/projects', user],
    ['PATCH', proj, user],
    ['POST', `${proj}/members`, user],
    ['PATCH', `${proj}/members/1`, user],
    ['POST', `${proj}/environments`, user],
    ['PATCH', `${proj}/environments/${project.staging}`, user],
    ['POST', `${proj}/environments/${project.staging}/require-approval`, user],
    ['POST', `${proj}/keys`, user],
    ['POST', `${proj}/segments`, user],
    ['PATCH', `${proj}/segments/s0`, user],
    ['POST', `${env}/flags`, user],
    ['PATCH', `${env}/flags/f0`, user],
    ['POST', `${env}/flags/f0/promote`, user],
    ['POST', `${env}/change-requests/1/reject`, user],
    ['POST', `${env}/sync`, user],
    ['POST', `${env}/impressions`, `Bearer ${project.sdkKey}`],
  ]
}

async function send(
  h: Harness,
  method: string,
  path: string,
  auth: string,
  contentType: string | undefined,
  body: string,
): Promise<RawResponse> {
  const bytes = Buffer.from(body, 'utf8')
  let head = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n`
  if (auth) head += `Authorization: ${auth}\r\n`
  if (contentType !== undefined) head += `Content-Type: ${contentType}\r\n`
  head += `Content-Length: ${bytes.length}\r\n\r\n`
  return rawRequest(h.url, Buffer.concat([Buffer.from(head, 'latin1'), bytes]), 15_000)
}

/** What a rejected request must leave alone: every table but the login failures (a wrong login counts by design). */
async function state(h: Harness): Promise<Record<string, unknown[]>> {
  const { flagsync_login_failures: _counted, ...rest } = await h.dump()
  return rest
}

describe.each(DIALECTS)('fuzzing the flag service on %s', (dialect) => {
  let h: Harness
  let ids: Ids
  beforeAll(async () => {
    h = await startHarness(dialect)
    const project = await createProject(h)
    ids = { project, token: await h.createToken(h.admin, 'read_write') }
    // The token's first use records last_used_at; do it now so that it is not a change the properties see.
    await h.call('/api/auth/me', { headers: { Authorization: `Bearer ${ids.token}` } })
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it(
    'random bodies at every JSON route: never a 5xx, errors are {error, code}, rejections change nothing',
    async () => {
      const all = routes(ids)
      const flagRoutes = all.flatMap(([, path], i) => (/\/flags(\/f0)?$/.test(path) ? [i] : []))
      expect(flagRoutes).toHaveLength(2)
      const syncRoute = all.findIndex(([, path]) => path.endsWith('/sync'))
      // The sync receiver with fuzzed flags and patches inside a well-formed batch, so they reach the flag checks.
      let batch = 0
      const syncBody = fc
        .tuple(fc.constantFrom('insert', 'update'), jsonFlagText, fc.option(fc.integer({ min: 0, max: 50 })))
        .map(([action, flag, base]) => {
          const data = action === 'insert' ? `"record":${flag}` : `"changes":${flag}`
          const baseRevision = base === null ? '' : `,"baseRevision":${base}`
          return `{"batchId":"fuzz-${++batch}-${Date.now()}","operations":[{"action":"${action}","collection":"flags","recordId":"f0",${data}${baseRevision}}]}`
        })
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            fc.tuple(fc.integer({ min: 0, max: all.length - 1 }), bodyText),
            // Half the runs: the flag routes (POST, PATCH) with flags that reach the typed-value check.
            fc.tuple(fc.constantFrom(...flagRoutes), jsonFlagText),
            fc.tuple(fc.constant(syncRoute), syncBody),
          ),
          fc.option(wrongContentType, { freq: 8 }),
          async ([index, body], wrongType) => {
            const [method, path, auth] = all[index] as [string, string, string]
            const before = await state(h)
            const res = await send(h, method, path, auth, wrongType ?? 'application/json', body)
            const context = `${method} ${path} ${wrongType ?? ''} ${body.slice(0, 200)} -> ${res.status} ${res.body.slice(0, 300)}`
            expect(res.status, context).toBeGreaterThanOrEqual(200)
            expect(res.status, context).toBeLessThan(500)
            if (res.status >= 400) {
              const error = JSON.parse(res.body) as { error?: unknown; code?: unknown }
              expect(typeof error.error, context).toBe('string')
              expect(typeof error.code, context).toBe('string')
              expect(await state(h), `${context}: rejected but changed the database`).toEqual(before)
            }
          },
        ),
        runs(120),
      )
      expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    },
    FUZZ_TIMEOUT_MS * 2,
  )

  it('a default_value nested 2 000 deep is a 422 at every flag route that takes one', async () => {
    const { project, token } = ids
    const env = `/api/environments/${project.production}`
    const flag = `{"key":"deep","is_enabled":true,"flag_type":"json","default_value":${deepText(2_000)}}`
    for (const [method, path, body] of [
      ['POST', `${env}/flags`, flag],
      ['PATCH', `${env}/flags/f0`, `{"default_value":${deepText(2_000)}}`],
    ] as const) {
      const res = await send(h, method, path, `Bearer ${token}`, 'application/json', body)
      expect(res.status, `${method} ${path}`).toBe(422)
      expect(JSON.parse(res.body)).toMatchObject({ code: 'validation_failed', max_depth: 64 })
    }
  })
})
