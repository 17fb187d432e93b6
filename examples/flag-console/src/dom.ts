/** A few lines instead of a framework: create elements with attributes, listeners and children. */

type Child = Node | string | null | undefined | false
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>

/**
 * `h('button', { class: 'btn', onclick: save }, 'Save')`. Attributes set to
 * false, null or undefined are left out; `true` sets an empty attribute;
 * `on<event>` keys add listeners.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === 'function') el.addEventListener(name.slice(2), value)
    else setAttr(el, name, value)
  }
  append(el, children)
  return el
}

/** An inline SVG icon from a path list (24×24 viewBox), hidden from assistive technology. */
export function icon(name: keyof typeof ICONS, className = 'icon'): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg'
  const svg = document.createElementNS(ns, 'svg')
  svg.setAttribute('viewBox', '0 0 24 24')
  svg.setAttribute('class', className)
  svg.setAttribute('aria-hidden', 'true')
  svg.setAttribute('focusable', 'false')
  for (const d of ICONS[name]) {
    const path = document.createElementNS(ns, 'path')
    path.setAttribute('d', d)
    svg.append(path)
  }
  return svg
}

const ICONS = {
  plus: ['M12 5v14', 'M5 12h14'],
  edit: ['M4 20h4L19 9l-4-4L4 16v4z', 'M13.5 6.5l4 4'],
  trash: ['M4 7h16', 'M10 11v6', 'M14 11v6', 'M6 7l1 13h10l1-13', 'M9 7V4h6v3'],
  cloudOff: ['M3 3l18 18', 'M8 8.5A5 5 0 0 0 6.5 18H17', 'M20.4 16.6A4 4 0 0 0 17 10h-.7A6 6 0 0 0 10 6.2'],
  check: ['M5 12.5l4.5 4.5L19 7.5'],
  sync: ['M20 11a8 8 0 0 0-14.6-4.5L4 8', 'M4 4v4h4', 'M4 13a8 8 0 0 0 14.6 4.5L20 16', 'M20 20v-4h-4'],
  clock: ['M12 7v5l3 2', 'M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18z'],
  alert: ['M12 9v4', 'M12 17h.01', 'M10.3 3.9L2.4 18a2 2 0 0 0 1.7 3h15.8a2 2 0 0 0 1.7-3L13.7 3.9a2 2 0 0 0-3.4 0z'],
  search: ['M11 18a7 7 0 1 0 0-14 7 7 0 0 0 0 14z', 'M20 20l-4-4'],
  x: ['M6 6l12 12', 'M18 6L6 18'],
  key: ['M8 20a4.5 4.5 0 1 0 0-9 4.5 4.5 0 0 0 0 9z', 'M11.2 12.3L20 3.5', 'M16.5 7l3 3', 'M14.5 9l2 2'],
} as const

export function setAttr(el: Element, name: string, value: string | number | boolean | null | undefined): void {
  if (value === false || value === null || value === undefined) el.removeAttribute(name)
  else el.setAttribute(name, value === true ? '' : String(value))
}

function append(el: Element, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    el.append(child)
  }
}

/** Replaces an element's children. */
export function replaceChildren(el: Element, ...children: Child[]): void {
  el.replaceChildren()
  append(el, children)
}

/** Sets text only when it differs, so screen readers and selections are not disturbed needlessly. */
export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text
}

let idCounter = 0
/** A unique id for label/description wiring. */
export function uid(prefix: string): string {
  idCounter += 1
  return `${prefix}-${idCounter}`
}

/** An element of the page shell (index.html) by id; throws when the shell lacks it. */
export function byId<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id)
  if (!el) throw new Error(`#${id} is missing from index.html`)
  return el as T
}
