// Bare baseline servers, one per mode, each in its own process like the real server:
//   buffer <file>       node:http answering every GET with the file's bytes, cached (the ceiling for GET /api/flags and /api/flags/:key)
//   sse-bootstrap <file> node:http answering every GET /stream with 200, the file's bytes (one shared Buffer) and
//                        then holding the stream open: a bootstrap with no store, no runtime and no framework
//   sse                 node:http holding /stream connections; POST /broadcast writes one event to all of them
//   sync-upsert <file>  node:http answering POST /sync: the body read and JSON.parse'd, its insert operations upserted
//                        as (scope, key, data, revision, updated_at) rows in one multi-row statement in one transaction
//                        (knex, SQLite file <file>, the store's pragmas), `{"applied":n}`: receiving and applying a
//                        batch with nothing else (no validation, no change log, no dedupe, no conflict check)
// Listens on 127.0.0.1, port $BASELINE_PORT (default: any free one); prints "listening on http://127.0.0.1:<port>".
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'

const [mode, file] = process.argv.slice(2)

/** @param {import('node:http').RequestListener} handler */
function listen(handler) {
  const server = createServer(handler)
  server.keepAliveTimeout = 65_000
  server.listen(Number(process.env.BASELINE_PORT ?? 0), '127.0.0.1', () => {
    const address = /** @type {import('node:net').AddressInfo} */ (server.address())
    process.stdout.write(`listening on http://127.0.0.1:${address.port}\n`)
  })
  return server
}

if (mode === 'buffer') {
  const body = readFileSync(/** @type {string} */ (file))
  listen((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length })
    res.end(body)
  })
} else if (mode === 'sse-bootstrap') {
  const body = readFileSync(/** @type {string} */ (file))
  listen((req, res) => {
    if (req.url !== '/stream') {
      res.writeHead(404)
      res.end()
      return
    }
    // The headers the real stream sends; the body is written as one chunk, as the real bootstrap is.
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    })
    res.write(body)
  })
} else if (mode === 'sse') {
  /** @type {Set<import('node:http').ServerResponse>} */
  const streams = new Set()
  listen((req, res) => {
    if (req.url === '/stream') {
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' })
      res.write('event: connected\ndata: true\n\n')
      streams.add(res)
      res.on('close', () => streams.delete(res))
      return
    }
    if (req.method === 'POST' && req.url === '/broadcast') {
      let body = ''
      req.setEncoding('utf8')
      req.on('data', (chunk) => {
        body += chunk
      })
      req.on('end', () => {
        // The same frame shape as the real stream's update event, built once and written to every stream.
        const frame = Buffer.from(`event: update\nid: 1\ndata: {"type":"UPSERT","flag":${body}}\n\n`)
        for (const stream of streams) stream.write(frame)
        res.writeHead(200, { 'Content-Type': 'text/plain' })
        res.end(String(streams.size))
      })
      return
    }
    res.writeHead(404)
    res.end()
  })
} else if (mode === 'sync-upsert') {
  const { FlagStore, openDatabase } = await import('@flagsync/store')
  const { createBaselineTable, upsertBaselineRows } = await import('../lib/baseline-table.mjs')
  const db = await openDatabase(`sqlite:${file}`)
  new FlagStore(db) // the receiver's pragmas
  await createBaselineTable(db.knex)
  listen((req, res) => {
    const chunks = /** @type {Buffer[]} */ ([])
    req.on('data', (chunk) => chunks.push(chunk))
    req.on('end', async () => {
      const { operations } = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      const at = Date.now()
      const rows = operations.map((/** @type {any} */ op, /** @type {number} */ i) => ({
        scope: '',
        key: op.recordId,
        data: JSON.stringify({ key: op.recordId, ...op.record }),
        revision: i,
        updated_at: at,
      }))
      await upsertBaselineRows(db.knex, rows)
      const body = JSON.stringify({ applied: rows.length })
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) })
      res.end(body)
    })
  })
} else {
  process.stderr.write(`unknown mode ${mode}\n`)
  process.exit(2)
}
