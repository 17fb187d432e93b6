import { corsAllowList, errorHandler, listen, type RunningServer } from '@flagsync/server-kit'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'

const servers: RunningServer[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close()
})

async function serve(origins: string[]): Promise<string> {
  const app = express()
  app.use(corsAllowList(origins))
  app.post('/sync', (_req, res) => {
    res.json({ ok: true })
  })
  app.use(errorHandler())
  const server = await listen(app, { host: '127.0.0.1', port: 0 })
  servers.push(server)
  return `http://127.0.0.1:${server.port}`
}

const preflight = (url: string, origin: string, headers: string) =>
  fetch(`${url}/sync`, {
    method: 'OPTIONS',
    headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': headers },
  })

const corsHeaders = (res: Response) =>
  Object.fromEntries([...res.headers].filter(([name]) => name.startsWith('access-control-')))

describe('corsAllowList: the request headers a preflight may use', () => {
  it('are those the preflight asks for, for an allowed origin: the sync client sends its own', async () => {
    const url = await serve(['https://app.example.com'])
    const res = await preflight(url, 'https://app.example.com', 'authorization,content-type,x-flagsync-actor,x-api-key')
    expect(res.status).toBe(204)
    expect(corsHeaders(res)).toEqual({
      'access-control-allow-origin': 'https://app.example.com',
      'access-control-allow-methods': 'GET,POST,PATCH,DELETE,OPTIONS',
      'access-control-allow-headers': 'authorization,content-type,x-flagsync-actor,x-api-key',
      'access-control-expose-headers': 'Retry-After,ETag',
      'access-control-max-age': '600',
    })
  })

  it('are never granted to an origin not on the list, whatever it asks', async () => {
    const url = await serve(['https://app.example.com'])
    for (const origin of ['https://evil.example.com', 'null', 'https://app.example.com.evil.example.com']) {
      const res = await preflight(url, origin, 'x-evil,cookie,authorization')
      expect(corsHeaders(res), origin).toEqual({})
    }
  })

  it("are granted with '*' to any origin, but never with credentials", async () => {
    const url = await serve(['*'])
    const res = await preflight(url, 'https://anyone.example.com', 'authorization,x-evil')
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    expect(res.headers.get('access-control-allow-headers')).toBe('authorization,x-evil')
    expect(res.headers.get('access-control-allow-credentials')).toBeNull()
  })
})
