import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url))
export const benchDir = fileURLToPath(new URL('..', import.meta.url))

/**
 * @typedef {object} Child
 * @property {import('node:child_process').ChildProcess} child
 * @property {number} pid
 * @property {() => string} output
 * @property {(pattern: RegExp, timeoutMs?: number) => Promise<RegExpExecArray>} waitFor
 * @property {(message: Record<string, unknown>, timeoutMs?: number) => Promise<any>} request
 * @property {() => Promise<void>} stop
 */

/**
 * Starts `node <script> ...args` in a child process through bash, so the
 * open-file limit can be raised first (`ulimit -n`); `exec` keeps the pid, so
 * /proc/<pid> is the node process itself.
 * @param {string} script absolute path
 * @param {string[]} [args]
 * @param {{ env?: Record<string, string>, ipc?: boolean, fdLimit?: number, nodeArgs?: string[] }} [options]
 * @returns {Child}
 */
export function spawnNode(script, args = [], options = {}) {
  const fdLimit = options.fdLimit ?? 20000
  const nodeArgs = options.nodeArgs ?? []
  const child = spawn(
    'bash',
    ['-c', `ulimit -n ${fdLimit} 2>/dev/null; exec "$@"`, 'bash', process.execPath, ...nodeArgs, script, ...args],
    {
      cwd: repoRoot,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe', ...(options.ipc ? ['ipc'] : [])],
    },
  )
  let out = ''
  const onData = (/** @type {Buffer} */ d) => {
    out += d
    if (out.length > 200_000) out = out.slice(-100_000)
  }
  child.stdout?.on('data', onData)
  child.stderr?.on('data', onData)
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)))

  let nextId = 1
  /** @type {Map<number, {resolve: (v: any) => void, reject: (e: Error) => void}>} */
  const pending = new Map()
  child.on('message', (/** @type {any} */ message) => {
    const waiter = pending.get(message?.replyTo)
    if (!waiter) return
    pending.delete(message.replyTo)
    if (message.error) waiter.reject(new Error(message.error))
    else waiter.resolve(message)
  })
  void exited.then((code) => {
    for (const w of pending.values()) w.reject(new Error(`child exited (${code}):\n${out.slice(-2000)}`))
    pending.clear()
  })

  return {
    child,
    get pid() {
      return /** @type {number} */ (child.pid)
    },
    output: () => out,
    waitFor(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          cleanup()
          reject(new Error(`timed out waiting for ${pattern}:\n${out.slice(-2000)}`))
        }, timeoutMs)
        const check = () => {
          const match = pattern.exec(out)
          if (match) {
            cleanup()
            resolve(match)
          }
        }
        const cleanup = () => {
          clearTimeout(timer)
          child.stdout?.off('data', check)
          child.stderr?.off('data', check)
        }
        child.stdout?.on('data', check)
        child.stderr?.on('data', check)
        void exited.then((code) => {
          cleanup()
          reject(new Error(`process exited (${code}) before ${pattern}:\n${out.slice(-2000)}`))
        })
        check()
      })
    },
    request(message, timeoutMs = 120_000) {
      const id = nextId++
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id)
          reject(new Error(`child did not answer ${JSON.stringify(message).slice(0, 100)} within ${timeoutMs} ms`))
        }, timeoutMs)
        pending.set(id, {
          resolve: (v) => {
            clearTimeout(timer)
            resolve(v)
          },
          reject: (e) => {
            clearTimeout(timer)
            reject(e)
          },
        })
        child.send({ ...message, id })
      })
    },
    /** SIGTERM first when BENCH_PROFILE is set (so --cpu-prof can write its file), then SIGKILL. */
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      if (process.env.BENCH_PROFILE) {
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
        await exited
        clearTimeout(timer)
        return
      }
      child.kill('SIGKILL')
      await exited
    },
  }
}

/**
 * Answers IPC requests in a child started with `ipc: true`.
 * @param {(message: any) => Promise<Record<string, unknown>> | Record<string, unknown>} handler
 */
export function serveRequests(handler) {
  process.on('message', async (/** @type {any} */ message) => {
    try {
      const reply = await handler(message)
      process.send?.({ ...reply, replyTo: message.id })
    } catch (error) {
      process.send?.({ replyTo: message.id, error: error instanceof Error ? error.stack : String(error) })
    }
  })
  process.on('disconnect', () => process.exit(0))
}

/** Node flags that let `settledRss` collect garbage in a child first. */
export const GC_SIGNAL_ARGS = ['--expose-gc', `--import=${join(benchDir, 'lib/gc-on-signal.mjs')}`]

/**
 * RSS of a child started with GC_SIGNAL_ARGS after a full GC in it.
 * @param {number} pid
 */
export async function settledRss(pid) {
  process.kill(pid, 'SIGUSR2')
  await new Promise((resolve) => setTimeout(resolve, 500))
  return rssOf(pid)
}

/** Resident set size of a process, bytes (from /proc/<pid>/status). @param {number} pid */
function rssOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const match = /VmRSS:\s+(\d+)\s+kB/.exec(status)
  if (!match) throw new Error(`no VmRSS for pid ${pid}`)
  return Number(match[1]) * 1024
}

/**
 * CPU time a process has used so far, user + system, in microseconds (from /proc/<pid>/stat, clock ticks of 10 ms:
 * take differences over runs of seconds). @param {number} pid
 */
export function cpuMicros(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}

/** A temp directory removed by the returned function. @param {string} prefix */
export function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), `flagsync-bench-${prefix}-`))
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/**
 * A compiled CLI of the repository (`packages/.../dist/cli.js`) on a fresh
 * SQLite file and a random port; resolves once it logs "listening on".
 * @param {string} cli path relative to the repository root
 * @param {Record<string, string>} [env]
 * @param {{ nodeArgs?: string[] }} [options]
 */
export async function startCli(cli, env = {}, options = {}) {
  const tmp = tempDir('server')
  const proc = spawnNode(join(repoRoot, cli), [], {
    nodeArgs: [...profileArgs(), ...(options.nodeArgs ?? [])],
    env: {
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      DATABASE_URL: `sqlite:${join(tmp.dir, 'flags.sqlite')}`,
      ...env,
    },
  })
  const match = await proc.waitFor(/listening on (http:\/\/[\d.:]+)/)
  return {
    ...proc,
    url: /** @type {string} */ (match[1]),
    async stop() {
      await proc.stop()
      tmp.remove()
    },
  }
}

/**
 * With BENCH_PROFILE=<dir>, servers run under --cpu-prof and write their
 * profiles there when stopped (the orchestrator's --profile sets it).
 */
export function profileArgs() {
  const dir = process.env.BENCH_PROFILE
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : []
}

/** The servers under test; BENCH_FLAT_API_CLI / BENCH_RECEIVER_CLI swap in a variant (path from the repository root) to A/B a change. */
export const FLAT_API_CLI = process.env.BENCH_FLAT_API_CLI || 'packages/flat-api/dist/cli.js'
export const RECEIVER_CLI = process.env.BENCH_RECEIVER_CLI || 'packages/receiver/dist/cli.js'
