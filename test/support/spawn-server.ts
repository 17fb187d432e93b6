import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export interface SpawnedServer {
  child: ChildProcess
  url: string
  output: () => string
  /** Resolves with the exit code (or signal name) when the process ends. */
  exited: Promise<number | string>
  kill(signal?: NodeJS.Signals): void
}

const root = fileURLToPath(new URL('../..', import.meta.url))

/**
 * Runs a compiled CLI (relative to the repository root) as a real process on a
 * random port and waits for its "listening on http://..." log line.
 */
export async function spawnServer(
  cliPath: string,
  env: Record<string, string>,
  timeoutMs = 15_000,
): Promise<SpawnedServer> {
  const child = spawn(process.execPath, [`${root}${cliPath}`], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
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
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line within ${timeoutMs} ms:\n${out}`)), timeoutMs)
    const check = () => {
      const match = /listening on (http:\/\/[\d.:]+)/.exec(out)
      if (match?.[1]) {
        clearTimeout(timer)
        resolve(match[1])
      }
    }
    child.stdout?.on('data', check)
    child.stderr?.on('data', check)
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`process exited (${code}) before listening:\n${out}`))
    })
  })
  return {
    child,
    url,
    output: () => out,
    exited,
    kill: (signal = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    },
  }
}
