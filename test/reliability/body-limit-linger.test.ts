import { fetchInChild } from '@flagsync/test-support/child-fetch'
import { afterEach, describe, expect, it } from 'vitest'
import { disposeTargets, flagService, flatApi, receiver, type Target } from './body-limit-targets.js'

/**
 * A body far over the limit still gets its 413 to a client that reads the
 * answer only once it has sent its whole body, as Node's fetch (undici) does:
 * the 413 is written at once, then the rest of the body is read and thrown
 * away before the connection is closed (lingering close, up to 32 MiB past
 * the limit). Closing on a client still sending resets the connection, and
 * the client sees EPIPE instead of the answer. The client runs in its own
 * process: sharing the server's event loop, it never races the close.
 */

afterEach(disposeTargets)

const targets: Array<[string, () => Promise<Target>, number]> = [
  ['the flat API, 20 MB to /sync', () => flatApi('/sync'), 20_000_000],
  ['the flat API, 6 MB to POST /api/flags', () => flatApi('/api/flags'), 6_000_000],
  ['the standalone receiver, 20 MB to /sync', receiver, 20_000_000],
  ["the flag service, 20 MB to an environment's /sync", () => flagService('sync'), 20_000_000],
  ["the flag service, 6 MB to an environment's POST /flags", () => flagService('flags'), 6_000_000],
]

const refusalOf = (target: Target) => ({
  status: 413,
  body: {
    error: `request body is larger than ${target.limit} bytes`,
    code: 'payload_too_large',
    limit_bytes: target.limit,
  },
})

describe("Node's fetch, in another process: a body far over the limit gets the 413 and its JSON, not EPIPE", () => {
  it.each(targets)('%s, declared and chunked', { timeout: 90_000 }, async (_name, start, bytes) => {
    const target = await start()
    const answers = await fetchInChild(`${target.url}${target.path}`, { bytes, times: 5, headers: target.headers })
    expect(answers).toEqual([
      ...Array.from({ length: 5 }, () => ({ kind: 'declared', ...refusalOf(target) })),
      ...Array.from({ length: 5 }, () => ({ kind: 'chunked', ...refusalOf(target) })),
    ])
  })
})
