// An experiment, not production code: the flat API server with GET /api/flags, GET /api/flags/:key and GET /stream
// answered by a plain node:http listener in front of the Express app, and (STATIC=1, the CLI's default when the
// console is built) the console mounted as usual. It measures the change proposed in README "Notes from profiling":
//   BENCH_FLAT_API_CLI=bench/variants/flat-api-fast-path.mjs node bench/rest.mjs
//   BENCH_FLAT_API_CLI=bench/variants/flat-api-fast-path.mjs node bench/sse-fanout.mjs
// FAST=0 runs the unchanged app through the same script. No auth or CORS on the fast path: it is only taken when
// SDK_KEY and CORS_ORIGINS are unset, as in the benchmarks.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { loadConfig, startFlatApiServer } from '@flagsync/flat-api'
import { createLogger } from '@flagsync/server-kit'

const config = loadConfig(process.env, { port: 0 })
const consoleDir = fileURLToPath(new URL('../../examples/flag-console/dist', import.meta.url))
if (process.env.STATIC !== '0' && existsSync(consoleDir)) config.staticDir = consoleDir
const server = await startFlatApiServer(config, createLogger({ level: 'warn' }))

if (process.env.FAST !== '0' && !config.sdkKey && config.corsOrigins.length === 0) {
  const http = server.server
  const [app] = http.listeners('request')
  // The headers Express + helmet send on every response, captured once.
  const sample = await fetch(`${server.url}/health`)
  /** @type {Record<string, string>} */
  const secure = {}
  const skip = new Set(['date', 'content-length', 'content-type', 'etag', 'connection', 'keep-alive'])
  for (const [name, value] of sample.headers) if (!skip.has(name)) secure[name] = value
  const { live, hub } = server.runtime
  http.removeAllListeners('request')
  http.on('request', (req, res) => {
    const url = req.url ?? ''
    if (req.method === 'GET') {
      if (url === '/api/flags') {
        const list = live.serializedList('')
        if (req.headers['if-none-match'] === list.etag) {
          res.writeHead(304, { ...secure, ETag: list.etag, 'Cache-Control': 'no-cache' })
          res.end()
          return
        }
        res.writeHead(200, {
          ...secure,
          'Content-Type': 'application/json; charset=utf-8',
          'Content-Length': list.body.length,
          ETag: list.etag,
          'Cache-Control': 'no-cache',
        })
        res.end(list.body)
        return
      }
      if (url === '/stream') {
        for (const [name, value] of Object.entries(secure)) res.setHeader(name, value)
        hub.open(req, res).write(server.runtime.bootstrap())
        return
      }
      if (url.startsWith('/api/flags/') && !url.includes('/', 11) && !url.includes('?')) {
        const entry = live.get(decodeURIComponent(url.slice(11)))
        if (entry) {
          const body = Buffer.from(entry.json)
          res.writeHead(200, {
            ...secure,
            'Content-Type': 'application/json; charset=utf-8',
            'Content-Length': body.length,
          })
          res.end(body)
          return
        }
      }
    }
    app?.call(http, req, res)
  })
}

process.stdout.write(`listening on ${server.url}\n`)
process.on('SIGTERM', () => server.close().then(() => process.exit(0)))
