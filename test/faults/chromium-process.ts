import { type ChildProcess, spawn } from 'node:child_process'
import { type Browser, chromium } from 'playwright-core'

/** Debian's Chromium; a downloaded browser is never used. */
const CHROMIUM_PATH = '/usr/bin/chromium'

export interface ChromiumProcess {
  /** The browser process, in its own process group (so its renderers die with it). */
  child: ChildProcess
  pid: number
  browser: Browser
  output: () => string
  /** Resolves with the exit code or signal name when the browser process ends. */
  exited: Promise<number | string>
  /** SIGKILL to the browser's whole process group, as when the machine pulls the plug on it. */
  kill(): Promise<number | string>
}

/**
 * Starts Chromium as a child process of the test (not through Playwright's
 * launcher, so the test can SIGKILL it), on a given profile directory, and
 * connects Playwright to it over CDP.
 */
export async function startChromium(userDataDir: string, timeoutMs = 30_000): Promise<ChromiumProcess> {
  const child = spawn(
    CHROMIUM_PATH,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--no-default-browser-check',
      '--password-store=basic',
      '--window-size=1280,800',
      `--user-data-dir=${userDataDir}`,
      '--remote-debugging-port=0',
      'about:blank',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  )
  let out = ''
  child.stdout?.on('data', (d) => {
    out += d
  })
  child.stderr?.on('data', (d) => {
    out += d
  })
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1))
  })
  const pid = child.pid
  if (pid === undefined) throw new Error(`could not start ${CHROMIUM_PATH}`)
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-pid, 'SIGKILL')
      } catch {
        child.kill('SIGKILL')
      }
    }
    return exited
  }
  try {
    const ws = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no DevTools line within ${timeoutMs} ms:\n${out}`)), timeoutMs)
      const check = () => {
        const match = /DevTools listening on (ws:\/\/\S+)/.exec(out)
        if (match?.[1]) {
          clearTimeout(timer)
          resolve(match[1])
        }
      }
      child.stderr?.on('data', check)
      void exited.then((code) => {
        clearTimeout(timer)
        reject(new Error(`chromium exited (${code}) before listening:\n${out}`))
      })
    })
    const browser = await chromium.connectOverCDP(ws, { timeout: timeoutMs })
    return { child, pid, browser, output: () => out, exited, kill }
  } catch (error) {
    await kill()
    throw error
  }
}
