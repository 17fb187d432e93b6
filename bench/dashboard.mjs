// dashboard.first_load.gz_bytes: what a browser downloads to show the service's dashboard the first time, gzip -9
// bytes: index.html plus every script, module preload and stylesheet it references, from the Vite build (built here,
// as `npm run build` does). Chunks loaded later (the impressions chart) are not first load. Goal: 150 kB.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { atMost, benchMain, log, row } from './lib/cli.mjs'
import { repoRoot } from './lib/proc.mjs'

const DIST = join(repoRoot, 'packages/dashboard/dist')

/** The files index.html makes the browser fetch before the first render, with their gzip -9 sizes. */
export function firstLoad(dist = DIST) {
  const html = readFileSync(join(dist, 'index.html'), 'utf8')
  const refs = [...html.matchAll(/<(?:script|link)\b[^>]*?(?:src|href)="\/?(assets\/[^"]+\.(?:js|css))"/g)].map(
    (m) => m[1],
  )
  const files = [
    { file: 'index.html', bytes: Buffer.from(html) },
    ...[...new Set(refs)].map((file) => ({ file, bytes: readFileSync(join(dist, file)) })),
  ]
  return files.map(({ file, bytes }) => ({ file, raw: bytes.length, gz: gzipSync(bytes, { level: 9 }).length }))
}

export async function run() {
  execFileSync(
    process.execPath,
    [join(repoRoot, 'node_modules/vite/bin/vite.js'), 'build', 'packages/dashboard', '--logLevel', 'warn'],
    {
      cwd: repoRoot,
      stdio: 'inherit',
    },
  )
  const files = firstLoad()
  const gz = files.reduce((sum, f) => sum + f.gz, 0)
  for (const f of files) log(`${f.file}: ${f.raw} B, ${f.gz} B gz`)
  return [
    row({
      id: 'dashboard.first_load.gz_bytes',
      value: gz,
      unit: 'bytes gz',
      baseline: null,
      ratio: null,
      goal: atMost(150_000),
      note: "the dashboard's first load (index.html, its scripts, preloads and stylesheets; Vite build, gzip -9)",
      extra: { files },
    }),
  ]
}

benchMain(import.meta.url, run)
