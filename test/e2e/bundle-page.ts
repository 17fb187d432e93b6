import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

/** A page on its own origin: `/bundle.js` is the entry bundled for browsers, every other path the HTML. */
export interface BundlePage {
  origin: string
  close(): Promise<void>
}

/**
 * Bundles `entry` (module source; bare imports resolve from this repository, workspace packages through their
 * `flagsync-source` export) with esbuild as an app would, and serves it with `html` from a real `node:http` server on
 * 127.0.0.1. A real server, not Playwright's `route.fulfill`: Chromium lets only such a page open EventSources to the
 * loopback servers under test.
 */
export async function serveBundlePage(html: string, entry: string): Promise<BundlePage> {
  const out = await build({
    stdin: { contents: entry, resolveDir: fileURLToPath(new URL('.', import.meta.url)), loader: 'js' },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    conditions: ['flagsync-source'],
    write: false,
    logLevel: 'silent',
  })
  const bundle = out.outputFiles[0]?.text ?? ''
  const server = createServer((req, res) => {
    const js = req.url === '/bundle.js'
    res.writeHead(200, { 'Content-Type': js ? 'text/javascript' : 'text/html; charset=utf-8' })
    res.end(js ? bundle : html)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
