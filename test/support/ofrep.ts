import { OFREPProvider } from '@openfeature/ofrep-provider'
import { OpenFeature } from '@openfeature/server-sdk'
import { openSse, type SseReader } from './sse-reader.js'

let domains = 0

/** An OpenFeature server client backed by the published OFREP provider, in a domain of its own. */
export async function ofrepClient(baseUrl: string, key: string) {
  const domain = `ofrep-${++domains}`
  const provider = new OFREPProvider({ baseUrl, headers: [['Authorization', `Bearer ${key}`]] })
  await OpenFeature.setProviderAndWait(domain, provider)
  return OpenFeature.getClient(domain)
}

/** POST an OFREP route with a JSON body (or raw text) and the given headers. */
export async function ofrepPost(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: ReturnType<typeof JSON.parse> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined }
}

/** Opens the refresh stream a bulk answer names (its URL carries the key, as a browser's EventSource needs). */
export async function openRefresh(
  bulk: { eventStreams?: Array<{ url: string }>; refreshConnections?: Array<{ url: string }> },
  headers: Record<string, string> = {},
): Promise<SseReader & { status: number }> {
  const url = bulk.eventStreams?.[0]?.url
  if (!url || bulk.refreshConnections?.[0]?.url !== url) throw new Error('no refresh connection in the bulk answer')
  return openSse(url, headers)
}

/** The data of the refetchEvaluation events received so far. */
export const refetches = (reader: SseReader) =>
  reader.events
    .filter((e) => e.event === undefined || e.event === 'message')
    .map((e) => ({ id: e.id, ...JSON.parse(e.data) }))
