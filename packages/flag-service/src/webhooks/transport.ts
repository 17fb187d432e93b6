import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { isRefusedAddress, RefusedTargetError } from './address-policy.js'

/** What a target answered; a transport throws instead when there was no answer (refused, unreachable, timeout). */
export interface TargetResponse {
  status: number
  /** The Retry-After header as sent, if any. */
  retryAfter: string | null
  /** The start of the body (at most `maxResponseBytes`), for the delivery log. */
  body: string
}

export interface PostOptions {
  timeoutMs: number
  allowPrivateTargets: boolean
  maxResponseBytes: number
}

/** Sends one signed delivery; tests inject their own. */
export type WebhookTransport = (
  url: string,
  headers: Record<string, string>,
  body: string,
  options: PostOptions,
) => Promise<TargetResponse>

/** A transport holding kept-alive connections: `close()` destroys them (the worker's shutdown calls it). */
export interface ClosableTransport {
  post: WebhookTransport
  close(): void
}

/**
 * A `lookup` that resolves once and hands the socket only addresses the
 * policy admits: the connection goes to the address that was checked, so a
 * second DNS answer (rebinding) cannot swap in another one.
 */
function checkedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0)
      const bad = allowPrivate ? undefined : addresses.find((a) => isRefusedAddress(a.address))
      if (bad) return callback(new RefusedTargetError(hostname, bad.address), '', 0)
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses)
      const first = addresses[0]
      if (!first) return callback(new Error(`${hostname} has no address`), '', 0)
      callback(null, first.address, first.family)
    })
  }
}

/** The first `max` bytes of the body as text; the rest is read and dropped, so the socket ends cleanly. */
function readBounded(res: IncomingMessage, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let kept = 0
    res.on('data', (chunk: Buffer) => {
      if (kept >= max) return
      const part = chunk.subarray(0, max - kept)
      chunks.push(part)
      kept += part.length
    })
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    res.on('error', reject)
  })
}

/** How long a kept-alive connection may sit idle (less when the target announces a shorter Keep-Alive timeout). */
const KEEP_ALIVE_IDLE_MS = 4000

/** Whether a request failed because its kept-alive connection was closed by the target as it was reused. */
const droppedReuse = (req: { reusedSocket: boolean }, answered: boolean, error: unknown) =>
  req.reusedSocket &&
  !answered &&
  ['ECONNRESET', 'EPIPE', 'ECONNABORTED'].includes((error as NodeJS.ErrnoException).code ?? '')

/**
 * POSTs with node:http(s) over kept-alive connections, at most `maxSockets`
 * per target origin: redirects are not followed (a 3xx is an answer like any
 * other non-2xx), the whole exchange is bounded by `timeoutMs`, and unless
 * private targets are allowed, IP literals and resolved addresses are checked
 * against the address policy. A connection is checked once, when it is
 * opened (its lookup is pinned); one agent per policy setting, so a
 * connection opened while private targets were allowed is never reused
 * without them. A request on a reused connection the target closed meanwhile
 * is sent again, on another connection (the target may then get it twice, as
 * with any retry).
 */
export function httpTransport(maxSockets: number): ClosableTransport {
  const agents = new Map<string, HttpAgent>()
  const agentFor = (https: boolean, allowPrivate: boolean): HttpAgent => {
    const key = `${https}:${allowPrivate}`
    let agent = agents.get(key)
    if (!agent) {
      const init = { keepAlive: true, maxSockets, maxFreeSockets: maxSockets, timeout: KEEP_ALIVE_IDLE_MS }
      agent = https ? new HttpsAgent({ ...init, scheduling: 'lifo' }) : new HttpAgent({ ...init, scheduling: 'lifo' })
      agents.set(key, agent)
    }
    return agent
  }
  const post: WebhookTransport = async (url, headers, body, options) => {
    const target = new URL(url)
    const host = target.hostname.replace(/^\[|\]$/g, '')
    if (!options.allowPrivateTargets && isIP(host) !== 0 && isRefusedAddress(host)) {
      throw new RefusedTargetError(host, host)
    }
    const agent = agentFor(target.protocol === 'https:', options.allowPrivateTargets)
    const deadline = Date.now() + options.timeoutMs
    for (;;) {
      try {
        return await postOnce(target, headers, body, options, agent, Math.max(1, deadline - Date.now()))
      } catch (error) {
        // The dropped connection is gone from the pool: the next try takes another kept-alive one or opens a new
        // one, so this ends after at most `maxSockets` dropped ones.
        if (!(error instanceof DroppedReuseError) || Date.now() >= deadline) throw error
      }
    }
  }
  return {
    post,
    close: () => {
      for (const agent of agents.values()) agent.destroy()
      agents.clear()
    },
  }
}

/** A request's kept-alive connection was closed by the target as it was reused: worth sending again. */
class DroppedReuseError extends Error {
  constructor(cause: Error) {
    super(cause.message, { cause })
  }
}

function postOnce(
  target: URL,
  headers: Record<string, string>,
  body: string,
  options: PostOptions,
  agent: HttpAgent,
  timeoutMs: number,
): Promise<TargetResponse> {
  return new Promise((resolve, reject) => {
    const request = target.protocol === 'https:' ? httpsRequest : httpRequest
    const init: RequestOptions = {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'flagsync-webhooks' },
      lookup: checkedLookup(options.allowPrivateTargets),
      agent,
      timeout: timeoutMs,
    }
    let answered = false
    const req = request(target, init, (res) => {
      answered = true
      readBounded(res, options.maxResponseBytes).then((text) => {
        const retryAfter = res.headers['retry-after']
        resolve({ status: res.statusCode ?? 0, retryAfter: retryAfter ?? null, body: text })
      }, reject)
    })
    const late = () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`))
    const deadline = setTimeout(late, timeoutMs)
    req.on('close', () => clearTimeout(deadline))
    req.on('timeout', late)
    req.on('error', (error) => reject(droppedReuse(req, answered, error) ? new DroppedReuseError(error) : error))
    req.end(body)
  })
}
