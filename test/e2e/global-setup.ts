import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { CHROMIUM_PATH } from './browser.js'

/**
 * The e2e tests run what `npm start` serves: the compiled server, the rollup
 * bundle of the console, the compiled examples and the Vite builds of the React
 * example and the service's dashboard. Build them first (quick when nothing changed); FLAGSYNC_SKIP_BUILD=1
 * skips this after a fresh `npm run build`.
 */
export default function setup(): void {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `${CHROMIUM_PATH} is missing: install Debian's chromium (apt-get install chromium), as .ci/run does`,
    )
  }
  if (process.env.FLAGSYNC_SKIP_BUILD === '1') return
  const root = fileURLToPath(new URL('../..', import.meta.url))
  const bin = (path: string) => `${root}node_modules/${path}`
  // vitest sets NODE_ENV=test, which Vite would bake into the bundles (React's development build):
  // build what `npm run build` builds.
  const env = { ...process.env, NODE_ENV: 'production' }
  const run = (args: string[]) => execFileSync(process.execPath, args, { cwd: root, stdio: 'inherit', env })
  run([bin('typescript/bin/tsc'), '-b', 'tsconfig.json', 'examples/evaluate'])
  run([bin('rollup/dist/bin/rollup'), '-c', '--silent'])
  run([bin('vite/bin/vite.js'), 'build', 'examples/react-flags', '--logLevel', 'warn'])
  run([bin('vite/bin/vite.js'), 'build', 'packages/dashboard', '--logLevel', 'warn'])
}
