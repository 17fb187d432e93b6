import { type RefObject, useEffect, useState } from 'react'

/** Tables with more rows than this render only the rows near the screen; shorter ones render every row. */
export const WINDOW_FROM = 200
/** Rows rendered above and below the screen, so scrolling and Tab reach rendered rows before the window moves. */
const OVERSCAN = 20
/** A row's height before one was measured (a flag row with its description and sentences). */
const FIRST_GUESS_PX = 64

/** The rows to render, `start` to `end` (exclusive), and the height the rows above and below stand in for. */
export interface RowWindow {
  start: number
  end: number
  before: number
  after: number
}

/**
 * The window of a table of `count` rows of about `rowHeight` px whose body's
 * top is `top` px from the viewport's top, in a viewport `viewport` px tall.
 *
 * @example
 * rowWindow(1000, -6400, 860, 64) // rows 80 to 134 are on screen: { start: 80 - 20, end: 134 + 20, … }
 */
export function rowWindow(count: number, top: number, viewport: number, rowHeight: number): RowWindow {
  if (count <= WINDOW_FROM) return { start: 0, end: count, before: 0, after: 0 }
  // At most the last row: a row height guessed too small would otherwise place the screen past the table.
  const first = Math.min(count - 1, Math.floor(Math.max(0, -top) / rowHeight))
  const last = Math.ceil(Math.max(0, viewport - top) / rowHeight)
  const start = Math.max(0, first - OVERSCAN)
  const end = Math.min(count, Math.max(start, last + OVERSCAN))
  return { start, end, before: start * rowHeight, after: (count - end) * rowHeight }
}

/**
 * The rows of a long table's body (`tbody`) worth rendering now: those on
 * screen and `OVERSCAN` more each side, following the page's scrolling and
 * size. The row height is measured from the rendered rows after each paint.
 */
export function useRowWindow(count: number, tbody: RefObject<HTMLTableSectionElement | null>): RowWindow {
  const [rowHeight, setRowHeight] = useState(FIRST_GUESS_PX)
  const [place, setPlace] = useState({ top: 0, viewport: typeof innerHeight === 'number' ? innerHeight : 860 })
  const windowed = count > WINDOW_FROM
  // biome-ignore lint/correctness/useExhaustiveDependencies: rowHeight and count move the body (the spacers): read it again
  useEffect(() => {
    if (!windowed) return
    let frame = 0
    const follow = () => {
      frame ||= requestAnimationFrame(() => {
        frame = 0
        const top = tbody.current?.getBoundingClientRect().top ?? 0
        setPlace((p) => (p.top === top && p.viewport === innerHeight ? p : { top, viewport: innerHeight }))
      })
    }
    follow()
    // Capture: the page may scroll in `main` or a wrapper as well as the window.
    addEventListener('scroll', follow, { capture: true, passive: true })
    addEventListener('resize', follow, { passive: true })
    return () => {
      cancelAnimationFrame(frame)
      removeEventListener('scroll', follow, { capture: true })
      removeEventListener('resize', follow)
    }
  }, [windowed, tbody, rowHeight, count])
  const range = rowWindow(count, place.top, place.viewport, rowHeight)
  // After the paint: measuring during the commit would force a layout before the first screen is shown.
  useEffect(() => {
    if (!windowed) return
    const rows = tbody.current?.querySelectorAll<HTMLElement>('tr[data-flag]')
    const first = rows?.[0]
    const last = rows?.[rows.length - 1]
    if (!first || !last || !rows) return
    const measured = (last.getBoundingClientRect().bottom - first.getBoundingClientRect().top) / rows.length
    if (measured > 0 && Math.abs(measured - rowHeight) > 1) setRowHeight(measured)
  })
  return range
}
