/**
 * A server-rendered React page in Chromium, on a return visit with a slow
 * stream: the first visit leaves the flag cache (the page's own localStorage
 * and IndexedDB) holding the server's flags; the server's flag then changes;
 * the second visit is rendered with the new flags (`bootstrap`) and hydrated
 * while the stream waits 2 s. A MutationObserver records every text the flag's
 * element ever shows: the older cached value must never be among them.
 */
import { fileURLToPath } from 'node:url'
import type { ClientFlag } from '@flagsync/flag-client'
import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { tempDir } from '@flagsync/test-support/temp-dir'
import { build } from 'esbuild'
import type { BrowserContext, Page as BrowserPage } from 'playwright-core'
import { createElement } from 'react'
import { renderToString } from 'react-dom/server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, watchErrors } from './browser.js'
import { Page } from './react-bootstrap-app.js'

const STREAM_DELAY_MS = 2000
const WITHIN = { timeout: 20_000, interval: 100 }

const dir = tempDir('flagsync-e2e-react-bootstrap-')
let server: SpawnedServer
let browser: Awaited<ReturnType<typeof launchChromium>>
let context: BrowserContext
let bundle: string
const errors: string[] = []

/** The browser side: hydrates the server's HTML with the flags the server embedded. */
async function buildBundle(): Promise<string> {
  const out = await build({
    stdin: {
      contents: `import { createElement } from 'react'
import { hydrateRoot } from 'react-dom/client'
import { Page } from './react-bootstrap-app.ts'
hydrateRoot(document.getElementById('root'), createElement(Page, { url: location.origin + '/stream', bootstrap: window.__FLAGS__ }))`,
      resolveDir: fileURLToPath(new URL('.', import.meta.url)),
      loader: 'ts',
    },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    conditions: ['flagsync-source'],
    define: { 'process.env.NODE_ENV': '"production"' },
    write: false,
    logLevel: 'silent',
  })
  return out.outputFiles[0]?.text ?? ''
}

/** What a server does per request: fetch the flags, render the page with them, embed them for hydration. */
async function serverRenderedPage(): Promise<string> {
  const flags = (await (await fetch(`${server.url}/api/flags`)).json()) as ClientFlag[]
  const html = renderToString(createElement(Page, { url: `${server.url}/stream`, bootstrap: flags }))
  const embedded = JSON.stringify(flags).replaceAll('<', '\\u003c')
  return `<!doctype html><title>bootstrap</title>
<div id="root">${html}</div>
<script>window.__FLAGS__ = ${embedded}</script>
<script type="module" src="/e2e/app.js"></script>`
}

/** Before any page script: records each text and source the flag's element shows, from the parser's first insert. */
const RECORD_RENDERS = `
window.__seen = []
new MutationObserver(() => {
  const el = document.getElementById('checkout')
  if (!el) return
  const entry = el.textContent + ' (' + el.dataset.source + ')'
  if (window.__seen.at(-1) !== entry) window.__seen.push(entry)
}).observe(document, { subtree: true, childList: true, characterData: true, attributes: true })`

async function visit({ slowStream }: { slowStream: boolean }): Promise<BrowserPage> {
  const page = await context.newPage()
  watchErrors(page, 'page', errors)
  await page.addInitScript(RECORD_RENDERS)
  await page.route(`${server.url}/e2e/**`, async (route) => {
    if (new URL(route.request().url()).pathname === '/e2e/app.js') {
      return route.fulfill({ contentType: 'text/javascript', body: bundle })
    }
    return route.fulfill({ contentType: 'text/html', body: await serverRenderedPage() })
  })
  if (slowStream) {
    await page.route(`${server.url}/stream**`, async (route) => {
      await new Promise((resolve) => setTimeout(resolve, STREAM_DELAY_MS))
      await route.continue()
    })
  }
  await page.goto(`${server.url}/e2e/index.html`)
  return page
}

const source = (page: BrowserPage) => page.locator('#checkout').getAttribute('data-source')
const seen = (page: BrowserPage) => page.evaluate(() => (window as unknown as { __seen: string[] }).__seen)
const cachedCheckout = (page: BrowserPage) =>
  page.evaluate(() => {
    const saved = JSON.parse(localStorage.getItem('flagsync:flags') ?? 'null') as {
      flags: Array<{ key: string; is_enabled: boolean }>
    } | null
    return saved?.flags.find((f) => f.key === 'new-checkout')?.is_enabled
  })

async function setCheckout(is_enabled: boolean) {
  const res = await fetch(`${server.url}/api/flags`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ key: 'new-checkout', is_enabled }),
  })
  expect(res.status).toBe(200)
}

beforeAll(async () => {
  server = await spawnServer('packages/flat-api/dist/cli.js', {
    DATABASE_URL: `sqlite:${dir.file('flags.sqlite')}`,
    POLL_INTERVAL_MS: '200',
  })
  await setCheckout(false)
  bundle = await buildBundle()
  browser = await launchChromium()
  context = await browser.newContext()
})

afterAll(async () => {
  await browser?.close()
  server?.kill()
  dir.remove()
})

describe('a server-rendered React page with bootstrap flags, in Chromium', () => {
  it('first visit: renders the server’s flags and leaves them in the flag cache', async () => {
    const page = await visit({ slowStream: false })
    await expect.poll(() => source(page), WITHIN).toBe('stream')
    await expect.poll(() => cachedCheckout(page), WITHIN).toBe(false)
    expect(await page.locator('#checkout').textContent()).toBe('Classic checkout')
    await page.close()
  })

  it('return visit after the flag changed, stream 2 s late: never shows the older cached value', async () => {
    await setCheckout(true)
    const page = await visit({ slowStream: true })
    expect(await cachedCheckout(page)).toBe(false) // the first visit's set, older than the page's flags
    await expect.poll(() => source(page), WITHIN).toBe('stream')
    const texts = await seen(page)
    expect(texts.filter((text) => !text.startsWith('New checkout'))).toEqual([])
    // The server's HTML as parsed, the client serving the bootstrap while the stream waited, then the stream's set.
    expect(texts).toEqual(['New checkout (none)', 'New checkout (bootstrap)', 'New checkout (stream)'])
    expect(await page.locator('#checkout').textContent()).toBe('New checkout')
    await page.close()
    expect(errors).toEqual([])
  })
})
