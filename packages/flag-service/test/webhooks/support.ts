import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Dialect } from '@flagsync/test-support/databases'
import { Webhook } from 'standardwebhooks'
import { vi } from 'vitest'
import { type Caller, type Harness, type Json, startHarness } from '../harness.js'

/** One request the receiver got, verified with the `standardwebhooks` package as a receiver would. */
export interface Received {
  id: string
  timestamp: string
  signature: string
  headers: IncomingHttpHeaders
  raw: string
  body: Json
  /** The error `Webhook.verify` threw, or null when the signature checked out. */
  verifyError: string | null
}

export interface Answer {
  status: number
  headers?: Record<string, string>
  body?: string
  /** Milliseconds to wait before answering. */
  delayMs?: number
}

/** A webhook target on 127.0.0.1:0: records and verifies every request, answers what `answer` says (200 by default). */
export interface Receiver {
  url: string
  received: Received[]
  /** The secret deliveries are verified with; set it from the create answer. */
  secret: string
  answer: (r: Received) => Answer
  /** Connections accepted so far, and those still open. */
  connections: { accepted: number; open: number }
  /** Resolves once `n` requests arrived (rejects after `timeoutMs`). */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>
  close(): Promise<void>
}

/**
 * `clock`: the service's injected clock, when a test moves it. `Webhook.verify` checks the signed timestamp
 * against `Date.now()` (5 minutes either way), so it runs with Date set to that clock.
 */
export async function startReceiver(clock?: () => number): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    received: [],
    secret: '',
    answer: () => ({ status: 200, body: 'ok' }),
    connections: { accepted: 0, open: 0 },
    waitFor: async (n, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs
      while (receiver.received.length < n) {
        if (Date.now() > deadline) {
          throw new Error(`expected ${n} deliveries, got ${receiver.received.length}`)
        }
        await new Promise((r) => setTimeout(r, 10))
      }
      return receiver.received
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8')
      const header = (name: string) => String(req.headers[name] ?? '')
      let verifyError: string | null = null
      if (clock) {
        vi.useFakeTimers({ toFake: ['Date'] })
        vi.setSystemTime(clock())
      }
      try {
        new Webhook(receiver.secret).verify(raw, {
          'webhook-id': header('webhook-id'),
          'webhook-timestamp': header('webhook-timestamp'),
          'webhook-signature': header('webhook-signature'),
        })
      } catch (error) {
        verifyError = (error as Error).message
      } finally {
        if (clock) vi.useRealTimers()
      }
      const got: Received = {
        id: header('webhook-id'),
        timestamp: header('webhook-timestamp'),
        signature: header('webhook-signature'),
        headers: req.headers,
        raw,
        body: JSON.parse(raw),
        verifyError,
      }
      receiver.received.push(got)
      const answer = receiver.answer(got)
      setTimeout(() => {
        res.writeHead(answer.status, answer.headers ?? {})
        res.end(answer.body ?? '')
      }, answer.delayMs ?? 0)
    })
  })
  server.on('connection', (socket) => {
    receiver.connections.accepted++
    receiver.connections.open++
    socket.on('close', () => receiver.connections.open--)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
  return receiver
}

/** A flag service whose clock starts now (receivers check the signature's timestamp) and may reach 127.0.0.1. */
export function startWebhookHarness(dialect: Dialect, env: Record<string, string> = {}): Promise<Harness> {
  return startHarness(dialect, {
    clockStart: Date.now(),
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_POLL_MS: '20', ...env },
  })
}

/** Creates a webhook (as `as`, default the admin) pointing at the receiver, and hands the receiver its secret. */
export async function createWebhook(
  h: Harness,
  projectId: string,
  receiver: Receiver,
  events: string[] = ['*'],
  as: Caller = h.admin,
): Promise<Json> {
  const res = await h.call(`/api/projects/${projectId}/webhooks`, {
    method: 'POST',
    as,
    body: { url: receiver.url, events },
  })
  if (res.status !== 200) throw new Error(`webhook: ${res.status} ${JSON.stringify(res.body)}`)
  receiver.secret = res.body.secret
  return res.body
}

/** Polls until `check` holds (or throws its last error after `timeoutMs`). */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await check()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await new Promise((r) => setTimeout(r, 20))
    }
  }
}
