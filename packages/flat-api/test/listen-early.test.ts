import { connect } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { type EarlyServer, listenEarly } from '../src/listen-early.js'

let bound: EarlyServer | undefined
afterEach(async () => {
  await bound?.close()
  bound = undefined
})

/** A raw HTTP/1.1 GET whose connection stays open; resolves the whole answer once the server ends it. */
function rawGet(port: number, path: string) {
  const socket = connect({ host: '127.0.0.1', port })
  let text = ''
  socket.on('data', (chunk) => {
    text += chunk
  })
  const answer = new Promise<string>((resolve) => socket.on('close', () => resolve(text)))
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)
  return { socket, answer }
}

describe('listenEarly', () => {
  it('accepts connections before the application exists and answers them, in order, once it does', async () => {
    bound = await listenEarly({ host: '127.0.0.1', port: 0 })
    const early = [rawGet(bound.port, '/one'), rawGet(bound.port, '/two')]
    await expect.poll(() => bound?.held).toBe(2)
    const order: string[] = []
    bound.serve((req, res) => {
      order.push(req.url ?? '')
      res.end(`answered ${req.url}`)
    })
    const answers = await Promise.all(early.map((r) => r.answer))
    expect(answers[0]).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*answered \/one$/)
    expect(answers[1]).toMatch(/answered \/two$/)
    expect(order).toEqual(['/one', '/two'])
    // After serve, requests go straight to the handler.
    expect(await (await fetch(`${bound.url}/three`)).text()).toBe('answered /three')
    expect(bound.held).toBe(0)
  })

  it('answers /health at once with 503 unavailable while starting (not held), and the application once serving', async () => {
    bound = await listenEarly({ host: '127.0.0.1', port: 0 })
    const held = rawGet(bound.port, '/api/flags')
    const [probes, head] = await Promise.all([
      Promise.all(Array.from({ length: 20 }, () => fetch(`${(bound as EarlyServer).url}/health`))),
      fetch(`${bound.url}/health`, { method: 'HEAD' }),
    ])
    for (const probe of probes) {
      expect(probe.status).toBe(503)
      expect(probe.headers.get('retry-after')).toBe('1')
      expect(await probe.json()).toEqual({ error: 'starting: the flags are not loaded yet', code: 'unavailable' })
    }
    expect(head.status).toBe(503)
    expect(await head.text()).toBe('')
    // Only the probes were answered; the application request waits for serve.
    expect(bound.held).toBe(1)
    bound.serve((req, res) => res.end(`answered ${req.url}`))
    expect(await held.answer).toMatch(/answered \/api\/flags$/)
    expect(await (await fetch(`${bound.url}/health`)).text()).toBe('answered /health')
  })

  it('drops a held request whose client has gone, so no stream is opened for nobody', async () => {
    bound = await listenEarly({ host: '127.0.0.1', port: 0 })
    const gone = rawGet(bound.port, '/gone')
    const staying = rawGet(bound.port, '/staying')
    await expect.poll(() => bound?.held).toBe(2)
    gone.socket.destroy()
    await new Promise((resolve) => setTimeout(resolve, 100))
    const served: string[] = []
    bound.serve((req, res) => {
      served.push(req.url ?? '')
      res.end('ok')
    })
    await staying.answer
    expect(served).toEqual(['/staying'])
  })

  it('holds hundreds of requests made while the process is still starting, each answered on its own connection', async () => {
    bound = await listenEarly({ host: '127.0.0.1', port: 0, backlog: 1024 })
    const many = Array.from({ length: 300 }, (_, i) => rawGet((bound as EarlyServer).port, `/${i}`))
    await expect.poll(() => bound?.held, { timeout: 10_000 }).toBe(300)
    bound.serve((req, res) => res.end(req.url))
    const answers = await Promise.all(many.map((r) => r.answer))
    answers.forEach((answer, i) => {
      expect(answer.endsWith(`/${i}`)).toBe(true)
    })
  })
})
