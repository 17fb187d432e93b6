import { execFileSync } from 'node:child_process'
import os from 'node:os'

/** What the numbers were measured on; taken at the start of the run. */
export function machineInfo() {
  const cpus = os.cpus()
  let gitCommit = null
  try {
    gitCommit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()
  } catch {
    // not a checkout
  }
  return {
    cpuModel: cpus[0]?.model?.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    loadAverageAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
    openFileLimit: openFileLimit(),
    startedAt: new Date().toISOString(),
    gitCommit,
  }
}

function openFileLimit() {
  try {
    return Number(execFileSync('bash', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim())
  } catch {
    return null
  }
}
