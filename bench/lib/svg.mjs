// A hand-written SVG line chart (no dependency): fan-out p99 against subscribers, ours vs the baseline.

/** @param {string} s */
const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** Round-number tick step for a range. @param {number} max @param {number} count */
function tickStep(max, count) {
  const raw = max / count
  const magnitude = 10 ** Math.floor(Math.log10(raw))
  for (const m of [1, 2, 2.5, 5, 10]) if (m * magnitude >= raw) return m * magnitude
  return 10 * magnitude
}

/**
 * @param {{ sizes: number[], series: Array<{ name: string, color: string, values: number[] }>, title: string, yLabel: string, xLabel: string, note?: string }} chart
 */
export function lineChart({ sizes, series, title, yLabel, xLabel, note }) {
  const width = 640
  const height = 380
  const m = { top: 48, right: 24, bottom: 64, left: 72 }
  const w = width - m.left - m.right
  const h = height - m.top - m.bottom
  const finite = series.flatMap((s) => s.values).filter(Number.isFinite)
  const yMaxRaw = Math.max(1, ...finite)
  const step = tickStep(yMaxRaw * 1.1, 5)
  const yMax = Math.ceil((yMaxRaw * 1.1) / step) * step
  const xMax = Math.max(...sizes)
  const x = (/** @type {number} */ v) => m.left + (v / xMax) * w
  const y = (/** @type {number} */ v) => m.top + h - (v / yMax) * h
  const out = []
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="12" role="img" aria-labelledby="chart-title">`,
  )
  out.push(
    `<title id="chart-title">${esc(title)}: ${series.map((s) => `${s.name} ${s.values.map((v) => v.toFixed(1)).join(' / ')} ms`).join('; ')} at ${sizes.join(' / ')}</title>`,
  )
  out.push(`<rect width="${width}" height="${height}" fill="#fff"/>`)
  out.push(`<text x="${width / 2}" y="24" text-anchor="middle" font-size="15" font-weight="600">${esc(title)}</text>`)
  // Grid and y axis.
  for (let v = 0; v <= yMax + 1e-9; v += step) {
    out.push(`<line x1="${m.left}" x2="${m.left + w}" y1="${y(v)}" y2="${y(v)}" stroke="#e5e5e5"/>`)
    out.push(`<text x="${m.left - 8}" y="${y(v) + 4}" text-anchor="end" fill="#444">${+v.toFixed(2)}</text>`)
  }
  out.push(`<line x1="${m.left}" x2="${m.left}" y1="${m.top}" y2="${m.top + h}" stroke="#333"/>`)
  out.push(`<line x1="${m.left}" x2="${m.left + w}" y1="${m.top + h}" y2="${m.top + h}" stroke="#333"/>`)
  // x ticks at the measured sizes.
  for (const s of sizes) {
    out.push(`<line x1="${x(s)}" x2="${x(s)}" y1="${m.top + h}" y2="${m.top + h + 5}" stroke="#333"/>`)
    out.push(
      `<text x="${x(s)}" y="${m.top + h + 20}" text-anchor="middle" fill="#444">${s.toLocaleString('en')}</text>`,
    )
  }
  out.push(`<text x="${m.left + w / 2}" y="${height - 22}" text-anchor="middle">${esc(xLabel)}</text>`)
  out.push(`<text transform="translate(18 ${m.top + h / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`)
  // Lines with point markers and value labels.
  series.forEach((s, index) => {
    // The first series labels its points above them, the second below, so close values stay readable.
    const dy = index === 0 ? -8 : 16
    const points = sizes
      .map((size, i) => [x(size), y(s.values[i] ?? Number.NaN)])
      .filter(([, py]) => Number.isFinite(py))
    out.push(
      `<polyline fill="none" stroke="${s.color}" stroke-width="2.5" points="${points.map((p) => p.map((c) => c.toFixed(1)).join(',')).join(' ')}"/>`,
    )
    sizes.forEach((size, i) => {
      const v = s.values[i]
      if (!Number.isFinite(v)) return
      out.push(`<circle cx="${x(size).toFixed(1)}" cy="${y(v).toFixed(1)}" r="4" fill="${s.color}"/>`)
      out.push(
        `<text x="${(x(size) - 6).toFixed(1)}" y="${(y(v) + dy).toFixed(1)}" text-anchor="end" fill="${s.color}" font-size="11">${v.toFixed(1)}</text>`,
      )
    })
  })
  // Legend.
  series.forEach((s, i) => {
    const ly = m.top + 8 + i * 18
    out.push(
      `<line x1="${m.left + 12}" x2="${m.left + 36}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2.5"/>`,
    )
    out.push(`<text x="${m.left + 42}" y="${ly + 4}">${esc(s.name)}</text>`)
  })
  if (note)
    out.push(
      `<text x="${width - 8}" y="${height - 6}" text-anchor="end" fill="#777" font-size="10">${esc(note)}</text>`,
    )
  out.push('</svg>')
  return `${out.join('\n')}\n`
}
