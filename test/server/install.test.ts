import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const root = new URL('../../', import.meta.url)
const run = promisify(execFile)

/**
 * Deploy pipelines run `npm ci`, which refuses a lock that lacks any package
 * package.json could need on some platform. A lock written by `npm install`
 * on top of an older lock keeps only this platform's optional binaries.
 */
describe('the committed package-lock.json', () => {
  it('is accepted by npm ci (dry run, offline: nothing is installed or fetched)', async () => {
    const { stdout, stderr } = await run(
      'npm',
      ['ci', '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund', '--offline'],
      { cwd: root, env: { ...process.env, npm_config_loglevel: 'warn' } },
    ).catch((error: { stdout: string; stderr: string }) => ({ stdout: error.stdout, stderr: error.stderr }))
    expect(stderr).not.toMatch(/EUSAGE|Missing: |in sync/)
    expect(stdout).toMatch(/up to date|added|changed/)
  }, 60_000)

  it("records other platforms' optional binaries (biome, rollup, esbuild)", () => {
    const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')) as {
      packages: Record<string, unknown>
    }
    const names = Object.keys(lock.packages)
    for (const binary of [
      'node_modules/@biomejs/cli-darwin-arm64',
      'node_modules/@biomejs/cli-win32-x64',
      'node_modules/@rollup/rollup-darwin-arm64',
      'node_modules/@rollup/rollup-win32-x64-msvc',
      'node_modules/@esbuild/darwin-arm64',
    ])
      expect(names).toContain(binary)
  })
})
