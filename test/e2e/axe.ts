import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { Page } from 'playwright-core'

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/** axe-core's serious and critical violations on the page as it is now (injected over CDP, so the CSP allows it). */
export async function axeViolations(p: Page): Promise<string[]> {
  await p.evaluate(AXE)
  return p.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: {
          run(): Promise<{
            violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown }> }>
          }>
        }
      }
    ).axe
    const { violations } = await axe.run()
    return violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.impact} ${v.id}: ${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')}`)
  })
}
