import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))
const RECEIVER_CLI = fileURLToPath(new URL('../../packages/receiver/dist/cli.js', import.meta.url))

/** Brings packages/receiver/dist (and the packages it references) up to date; fast when nothing changed. */
export function buildReceiver(): Promise<void> {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [tsc, '-b', 'packages/receiver'], { cwd: root, timeout: 110_000 }, (error, stdout) => {
      if (error) reject(new Error(`tsc -b packages/receiver failed:\n${stdout}\n${error.message}`))
      else resolve()
    })
  })
}

export interface ReceiverProcess {
  readonly child: ChildProcess
  /** Base URL, e.g. http://127.0.0.1:40123 */
  readonly baseUrl: string
  /** The receiver's URL as logged, e.g. http://127.0.0.1:40123/sync */
  readonly receiverUrl: string
  /** Everything written to stdout and stderr so far. */
  output(): string
  /** Log messages (pino `msg`) so far. */
  messages(): string[]
  /** Sends a signal and resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

const running = new Set<ChildProcess>()

/** Kills every receiver process still running (call from afterEach/afterAll, also after failures). */
export async function killAllReceivers(): Promise<void> {
  await Promise.all(
    [...running].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve()
          child.once('exit', () => resolve())
          child.kill('SIGKILL')
        }),
    ),
  )
  running.clear()
}

function spawnCli(env: Record<string, string>): {
  child: ChildProcess
  output: () => string
  exited: Promise<number | null>
} {
  const child = spawn(process.execPath, [RECEIVER_CLI], {
    cwd: root,
    // A clean environment: nothing of the test runner's (SDK_KEY, NODE_OPTIONS...) leaks in.
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', HOST: '127.0.0.1', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.add(child)
  let out = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    out += chunk.toString()
  })
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      running.delete(child)
      resolve(code)
    })
  })
  return { child, output: () => out, exited }
}

function messagesOf(output: string): string[] {
  return output
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      try {
        return String((JSON.parse(line) as { msg?: unknown }).msg ?? line)
      } catch {
        return line
      }
    })
}

/** Starts `flagsync-receiver` (the compiled CLI) and resolves once it logs its address. */
export async function spawnReceiver(env: Record<string, string>, timeoutMs = 15_000): Promise<ReceiverProcess> {
  const { child, output, exited } = spawnCli(env)
  const receiverUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup()
      reject(new Error(`receiver did not start within ${timeoutMs} ms:\n${output()}`))
    }, timeoutMs)
    const check = () => {
      const match = /listening on (http:\/\/\S+)/.exec(output())
      if (match?.[1]) {
        cleanup()
        resolve(match[1])
      }
    }
    const onExit = (code: number | null) => {
      cleanup()
      reject(new Error(`receiver exited with ${code} before listening:\n${output()}`))
    }
    const cleanup = () => {
      clearTimeout(timer)
      child.stdout?.off('data', check)
      child.off('exit', onExit)
    }
    child.stdout?.on('data', check)
    child.once('exit', onExit)
    check()
  })
  return {
    child,
    baseUrl: new URL(receiverUrl).origin,
    receiverUrl,
    output,
    messages: () => messagesOf(output()),
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode
      child.kill(signal)
      return exited
    },
  }
}

/** Runs the CLI expecting it to fail at startup; resolves with its exit code and output. */
export async function runReceiverExpectingExit(
  env: Record<string, string>,
  timeoutMs = 15_000,
): Promise<{ code: number | null; output: string; messages: string[] }> {
  const { child, output, exited } = spawnCli(env)
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  const code = await exited
  clearTimeout(timer)
  return { code, output: output(), messages: messagesOf(output()) }
}
