import { createServer, request, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface FrontServer {
  url: string
  close(): Promise<void>
}

/**
 * A flag service `/stream` for one environment (connected, the flags, ready, then
 * silence) in front of a real flag service: every other request is proxied to
 * `target`, so a client pointed here posts its impressions to the real routes
 * through the URL it derives from the stream URL. It stands in for the
 * service's own /stream so the test decides what the stream says.
 * `environmentId: true` sends the flat API's `connected` instead.
 */
export async function startFrontServer(
  target: string,
  stream: { environmentId: string | null | true; flags: Array<Record<string, unknown>> },
): Promise<FrontServer> {
  const streams = new Set<ServerResponse>()
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url?.startsWith('/stream')) {
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' })
      const connected = stream.environmentId === true ? true : { environment_id: stream.environmentId }
      res.write(`event: connected\ndata: ${JSON.stringify(connected)}\n\n`)
      for (const flag of stream.flags) {
        const update = typeof stream.environmentId === 'string' ? { env_id: stream.environmentId } : {}
        res.write(`event: update\ndata: ${JSON.stringify({ type: 'UPSERT', ...update, flag })}\n\n`)
      }
      if (stream.environmentId !== true) res.write(`event: ready\ndata: "${stream.flags.length}"\n\n`)
      streams.add(res)
      req.on('close', () => streams.delete(res))
      return
    }
    const upstream = request(`${target}${req.url ?? '/'}`, { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers)
      up.pipe(res)
    })
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502)
      res.end()
    })
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      for (const res of streams) res.end()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
