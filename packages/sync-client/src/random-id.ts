/**
 * A v4 UUID. `crypto.randomUUID` exists only in secure contexts (https, localhost); plain-http pages still have
 * `getRandomValues` (every browser, Node ≥ 20). Elsewhere, pass the client a `generateId`.
 */
export function randomId(): string {
  const c = (globalThis as { crypto: Crypto }).crypto
  if (typeof c.randomUUID === 'function') return c.randomUUID()
  const bytes = c.getRandomValues(new Uint8Array(31))
  let i = 0
  // Each 0, 1 or 8 of the template becomes a random hex digit; a 4 stays (the version), and the digit after it is
  // 8 to b (the variant: 8 ^ 0..3).
  return '10000000-1000-4000-8000-100000000000'.replace(/[018]/g, (d) =>
    (+d ^ ((bytes[i++] as number) & (15 >> (+d / 4)))).toString(16),
  )
}
