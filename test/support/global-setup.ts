import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/**
 * Tests that spawn real server processes run the compiled dist/ files, so the
 * build must be current. tsc -b is incremental: a no-op when nothing changed.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL('../..', import.meta.url))
  execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-b'], { cwd: root, stdio: 'inherit' })
}
