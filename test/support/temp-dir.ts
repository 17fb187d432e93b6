import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A fresh directory under the OS temp dir, removed by `remove()`. */
export function tempDir(prefix = 'flagsync-'): { path: string; file(name: string): string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix))
  return { path, file: (name) => join(path, name), remove: () => rmSync(path, { recursive: true, force: true }) }
}
