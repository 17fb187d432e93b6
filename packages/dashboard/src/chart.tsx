import 'uplot/dist/uPlot.min.css'
import { useEffect, useRef } from 'react'
import uPlot from 'uplot'
import type { Series } from './time-series.js'

// Distinguishable colors with enough contrast on white; served values beyond these cycle.
const COLORS = ['#4338ca', '#047857', '#b91c1c', '#b45309', '#0e7490', '#7e22ce', '#be185d', '#4d7c0f']

/**
 * uPlot's canvas line chart of evaluations per bucket, one line per served
 * value. Loaded on demand (see impressions-sections), so uPlot is not part of
 * the first load. The canvas is an image for assistive technologies, with a
 * description; the numbers are in the totals table beside it.
 */
export default function EvaluationsChart(props: { series: Series; label: string }) {
  const host = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const target = host.current
    if (!target || props.series.times.length === 0) return
    const values = [...props.series.counts.keys()]
    const bucketSeconds = props.series.bucketMs / 1000
    const width = Math.max(280, Math.min(900, target.clientWidth || 600))
    const plot = new uPlot(
      {
        width,
        height: 240,
        scales: {
          // One bucket (a burst of evaluations within a minute): uPlot widens a single time to about 1 000 days
          // with the point on the left edge. Show the bucket with one bucket either side instead.
          x: {
            time: true,
            range: (_u, min, max) => {
              const only = props.series.times.length === 1 ? props.series.times[0] : undefined
              return only === undefined ? [min, max] : [only - bucketSeconds, only + bucketSeconds]
            },
          },
          // Counts start at 0: an autoscaled axis starting at the minimum makes 1 look like none. Headroom keeps
          // the highest point off the top edge.
          y: { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.1))] },
        },
        series: [
          {},
          ...values.map((value, i) => ({
            label: value,
            stroke: COLORS[i % COLORS.length],
            width: 2,
            points: { show: props.series.times.length < 40 },
          })),
        ],
        axes: [{}, { label: 'evaluations' }],
      },
      [props.series.times, ...values.map((v) => props.series.counts.get(v) ?? [])],
      target,
    )
    // Follow the page's width (a phone turned, a window resized) instead of keeping the width of the first render.
    const resize = new ResizeObserver(() => {
      const next = Math.max(280, Math.min(900, target.clientWidth || width))
      if (next !== plot.width) plot.setSize({ width: next, height: 240 })
    })
    resize.observe(target)
    return () => {
      resize.disconnect()
      plot.destroy()
    }
  }, [props.series])
  return <div ref={host} className="chart" role="img" aria-label={props.label} />
}
