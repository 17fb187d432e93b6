import { randomUUID } from 'node:crypto'

/**
 * A realistic flat flag of about `bytes` bytes of JSON (≥ 200).
 * @param {number} i
 * @param {number} [bytes]
 */
export function makeFlag(i, bytes = 290) {
  const flag = {
    key: `flag-${String(i).padStart(5, '0')}`,
    is_enabled: i % 3 !== 0,
    rollout_percentage: i % 4 === 0 ? null : (i * 7) % 101,
    description: '',
    rules: [{ attribute: 'country', operator: 'equals', values: ['DE', 'FR', 'NL'] }],
  }
  const pad = bytes - JSON.stringify(flag).length
  flag.description = `Benchmark flag ${i}: ${'lorem ipsum dolor sit amet '.repeat(8)}`.slice(0, Math.max(0, pad))
  return flag
}

/** A sync batch inserting flags. @param {ReturnType<typeof makeFlag>[]} flags */
export function insertBatch(flags, batchId = randomUUID()) {
  return {
    batchId,
    operations: flags.map(({ key, ...record }) => ({ action: 'insert', collection: 'flags', recordId: key, record })),
  }
}

/**
 * Seeds a server's flags through its POST /sync, at most 1000 per request.
 * @param {string} baseUrl
 * @param {ReturnType<typeof makeFlag>[]} flags
 */
export async function seedFlags(baseUrl, flags) {
  for (let i = 0; i < flags.length; i += 1000) {
    const res = await fetch(`${baseUrl}/sync`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(insertBatch(flags.slice(i, i + 1000))),
    })
    if (!res.ok) throw new Error(`seeding failed: ${res.status} ${await res.text()}`)
    await res.arrayBuffer()
  }
}
