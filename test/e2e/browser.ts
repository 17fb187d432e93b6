import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type Browser, type BrowserContext, type CDPSession, chromium, type Page } from 'playwright-core'

/** Debian's Chromium (apt-get install chromium); a downloaded browser is never used. */
export const CHROMIUM_PATH = '/usr/bin/chromium'

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  })
}

/** Screenshots go to test-results/e2e/ (gitignored; CI keeps the workspace). */
const SCREENSHOT_DIR = fileURLToPath(new URL('../../test-results/e2e/', import.meta.url))

/** The whole page, or only the viewport (`fullPage: false`) while a modal dialog is open. */
export async function screenshot(page: Page, name: string, { fullPage = true } = {}): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true })
  const path = `${SCREENSHOT_DIR}${name}.png`
  await page.mouse.move(0, 0) // no accidental hover state in the picture
  // A full-page capture of a scrolled page draws the sticky header out of place.
  if (fullPage) await page.evaluate(() => window.scrollTo(0, 0))
  await page.screenshot({ path, fullPage })
  return path
}

/**
 * Collects uncaught exceptions and console errors of a page, so a test can
 * assert it stayed healthy. The browser's own "Failed to load resource" lines
 * (requests made while offline, the receiver's 422) are expected and left out.
 */
export function watchErrors(page: Page, label: string, into: string[] = []): string[] {
  page.on('pageerror', (error) => into.push(`${label} pageerror: ${error.message}`))
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) {
      into.push(`${label} console: ${message.text()}`)
    }
  })
  return into
}

/**
 * A page in a fresh browser context (its own cookies and storage) at desktop size, its errors collected into
 * `errors`; `timeoutMs` is the context's default wait, Playwright's 30 s when omitted.
 */
export async function newPage(
  browser: Browser,
  label: string,
  errors: string[],
  { timeoutMs }: { timeoutMs?: number } = {},
): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
  if (timeoutMs !== undefined) context.setDefaultTimeout(timeoutMs)
  const page = await context.newPage()
  watchErrors(page, label, errors)
  return page
}

/** CDP sessions holding an offline emulation that `reloadOffline` sent, per browser context. */
const offlineSessions = new WeakMap<BrowserContext, CDPSession[]>()

const emulateOffline = (cdp: CDPSession, offline: boolean) =>
  cdp.send('Network.emulateNetworkConditions', { offline, latency: 0, downloadThroughput: -1, uploadThroughput: -1 })

/**
 * Reloads a page whose context is offline (`context.setOffline(true)`) and tells the new document so. Chromium keeps
 * the network offline across the reload, but the new document answers `navigator.onLine === true` and hears no
 * `offline` event until the emulation is sent again. The session that sends it stays attached (detaching would end
 * its emulation while the context is still offline): bring the context back with `goOnline`, which ends it too.
 */
export async function reloadOffline(page: Page, options: Parameters<Page['reload']>[0] = {}): Promise<void> {
  await page.reload(options)
  const context = page.context()
  const cdp = await context.newCDPSession(page)
  await emulateOffline(cdp, true)
  offlineSessions.set(context, [...(offlineSessions.get(context) ?? []), cdp])
}

/** `context.setOffline(false)`, and the end of every offline emulation `reloadOffline` sent in that context. */
export async function goOnline(context: BrowserContext): Promise<void> {
  await context.setOffline(false)
  for (const cdp of offlineSessions.get(context) ?? []) {
    await emulateOffline(cdp, false).catch(() => undefined) // its page may be closed already
    await cdp.detach().catch(() => undefined)
  }
  offlineSessions.delete(context)
}
