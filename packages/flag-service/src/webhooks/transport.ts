import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http'
import { request as httpsRequest } from 'node:https'
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

/**
 * POSTs with node:http(s): redirects are not followed (a 3xx is an answer
 * like any other non-2xx), the whole exchange is bounded by `timeoutMs`, and
 * unless private targets are allowed, IP literals and resolved addresses are
 * checked against the address policy.
 */
export const httpTransport: WebhookTransport = (url, headers, body, options) =>
  new Promise((resolve, reject) => {
    const target = new URL(url)
    const host = target.hostname.replace(/^\[|\]$/g, '')
    if (!options.allowPrivateTargets && isIP(host) !== 0 && isRefusedAddress(host)) {
      reject(new RefusedTargetError(host, host))
      return
    }
    const request = target.protocol === 'https:' ? httpsRequest : httpRequest
    const init: RequestOptions = {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'flagsync-webhooks' },
      lookup: checkedLookup(options.allowPrivateTargets),
      agent: false,
      timeout: options.timeoutMs,
    }
    const req = request(target, init, (res) => {
      readBounded(res, options.maxResponseBytes).then((text) => {
        const retryAfter = res.headers['retry-after']
        resolve({ status: res.statusCode ?? 0, retryAfter: retryAfter ?? null, body: text })
      }, reject)
    })
    const deadline = setTimeout(
      () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)),
      options.timeoutMs,
    )
    req.on('close', () => clearTimeout(deadline))
    req.on('timeout', () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)))
    req.on('error', reject)
    req.end(body)
  })
