import autocannon from 'autocannon'

/**
 * One bounded autocannon run against 127.0.0.1; resolves requests/s (2xx only)
 * and latency figures.
 * @param {{ url: string, duration?: number, connections?: number, headers?: Record<string, string>, warmup?: number }} options
 */
export async function loadTest({ url, duration = 3, connections = 50, headers = {}, warmup = 0 }) {
  if (!/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(url)) throw new Error(`refusing to load ${url}`)
  if (warmup > 0) await run({ url, duration: warmup, connections, headers })
  const result = await run({ url, duration, connections, headers })
  const ok = result['2xx']
  if (result.non2xx > 0 || result.errors > 0 || ok === 0) {
    throw new Error(`load run against ${url}: ${ok} 2xx, ${result.non2xx} non-2xx, ${result.errors} errors`)
  }
  return {
    requestsPerSecond: ok / (result.duration || duration),
    latencyP50: result.latency.p50,
    latencyP99: result.latency.p99,
    bytesPerSecond: result.throughput.average,
  }
}

/** @param {{ url: string, duration: number, connections: number, headers: Record<string, string> }} o */
function run(o) {
  return new Promise((resolve, reject) => {
    autocannon(
      { url: o.url, duration: o.duration, connections: o.connections, headers: o.headers, pipelining: 1 },
      (/** @type {Error | null} */ err, /** @type {any} */ result) => (err ? reject(err) : resolve(result)),
    )
  })
}
