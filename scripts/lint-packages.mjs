// Checks what each published package would ship: every non-private workspace under packages/ is packed
// once with `npm pack` (one npm process for all of them), then each tarball is checked by
//   - publint (strict: warnings and suggestions fail too): exports, files, types, package.json fields;
//   - @arethetypeswrong/core, the library behind the attw CLI, with the CLI's `--profile esm-only` (node10 and
//     node16-from-CJS resolutions ignored: the packages are ESM-only on purpose); in-process, because ten attw CLI
//     runs cost ~5 s each;
//   - the tarball's file list: no .tsbuildinfo, no tests, a LICENSE.
// Needs built dist/ folders (npm install builds them). `node scripts/lint-packages.mjs [package-dir...]`.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { checkPackage, createPackageFromTarballData } from '@arethetypeswrong/core'
import { publint } from 'publint'
import { formatMessage } from 'publint/utils'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const IGNORED_RESOLUTIONS = ['node10', 'node16-cjs']
const FORBIDDEN_FILES = [/\.tsbuildinfo$/, /\.test\.[cm]?[jt]sx?$/, /(^|\/)test\//, /(^|\/)__tests__\//]

const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'))

const requested = process.argv.slice(2)
const dirs = (
  requested.length > 0 ? requested : readdirSync(join(root, 'packages')).map((name) => `packages/${name}`)
).filter((dir) => {
  try {
    return !readJson(join(root, dir, 'package.json')).private
  } catch {
    return false // a folder without a package.json
  }
})

const out = mkdtempSync(join(tmpdir(), 'flagsync-packs-'))
let failures = 0
try {
  const packed = JSON.parse(
    execFileSync(
      'npm',
      ['pack', '--json', '--ignore-scripts', '--pack-destination', out, ...dirs.flatMap((d) => ['-w', d])],
      { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 64 * 1024 * 1024 },
    ),
  )
  for (const [i, pack] of packed.entries()) {
    const dir = dirs[i]
    const problems = []
    const paths = pack.files.map((f) => f.path)
    for (const path of paths) {
      if (FORBIDDEN_FILES.some((re) => re.test(path))) problems.push(`tarball: ${path} should not be published`)
    }
    if (!paths.includes('LICENSE')) problems.push('tarball: no LICENSE file')

    const tarball = readFileSync(join(out, pack.filename))
    const pkg = readJson(join(root, dir, 'package.json'))
    const lint = await publint({
      pack: { tarball: tarball.buffer.slice(tarball.byteOffset, tarball.byteOffset + tarball.byteLength) },
      strict: true,
    })
    for (const message of lint.messages) {
      problems.push(`publint ${message.type}: ${formatMessage(message, pkg, { color: false }) ?? message.code}`)
    }

    const analysis = await checkPackage(createPackageFromTarballData(new Uint8Array(tarball)))
    if (!analysis.types) problems.push('attw: the package ships no types')
    else {
      for (const problem of analysis.problems) {
        if ('resolutionKind' in problem && IGNORED_RESOLUTIONS.includes(problem.resolutionKind)) continue
        const where = 'entrypoint' in problem ? ` (${problem.entrypoint}, ${problem.resolutionKind})` : ''
        problems.push(`attw: ${problem.kind}${where}`)
      }
    }

    if (problems.length === 0) console.log(`ok   ${pack.name} (${pack.entryCount} files)`)
    else {
      failures++
      console.log(`FAIL ${pack.name}\n${problems.map((p) => `     ${p}`).join('\n')}`)
    }
  }
} finally {
  rmSync(out, { recursive: true, force: true })
}
if (failures > 0) {
  console.error(`${failures} package(s) would publish with problems`)
  process.exitCode = 1
}
