import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** One answer Node's fetch got, or the error it threw (its cause's code, e.g. `EPIPE`). */
export type ChildFetchAnswer =
  | { kind: 'declared' | 'chunked'; status: number; body: unknown }
  | { kind: 'declared' | 'chunked'; error: string }

/**
 * POSTs a JSON array of `bytes` bytes (`[`, spaces, `]`) to `url` `times` times
 * with a Content-Length, then `times` times chunked (a ReadableStream body), with
 * the global `fetch` (undici) of a separate Node process, and lists what each got.
 *
 * The client has to run in its own process: sharing the server's event loop,
 * it never races the server closing the connection while it is still sending.
 */
export async function fetchInChild(
  url: string,
  options: { bytes: number; times: number; headers?: Record<string, string> },
): Promise<ChildFetchAnswer[]> {
  const script = `
    const [url, bytes, times, headers] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3]), JSON.parse(process.argv[4])]
    const body = Buffer.from('[' + ' '.repeat(bytes - 2) + ']')
    const chunked = () => new ReadableStream({
      start(controller) {
        for (let at = 0; at < body.length; at += 65536) controller.enqueue(body.subarray(at, at + 65536))
        controller.close()
      },
    })
    const out = []
    for (const kind of ['declared', 'chunked']) {
      for (let i = 0; i < times; i++) {
        try {
          const res = await fetch(url, {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/json' },
            body: kind === 'declared' ? body : chunked(),
            duplex: 'half',
          })
          const text = await res.text()
          let parsed = text
          try { parsed = JSON.parse(text) } catch {}
          out.push({ kind, status: res.status, body: parsed })
        } catch (error) {
          out.push({ kind, error: String(error.cause?.code ?? error.cause ?? error) })
        }
      }
    }
    console.log(JSON.stringify(out))
  `
  const { stdout } = await run(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      script,
      url,
      String(options.bytes),
      String(options.times),
      JSON.stringify(options.headers ?? {}),
    ],
    { maxBuffer: 16 * 1024 * 1024, timeout: 120_000 },
  )
  return JSON.parse(stdout) as ChildFetchAnswer[]
}
