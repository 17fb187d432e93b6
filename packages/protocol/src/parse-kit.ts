/**
 * The building blocks of the generated browser parsers (`browser-parsers.ts`,
 * written by `scripts/browser-parsers.mjs` from the zod schemas). Each block
 * follows zod's own rules for its schema kind on JSON data, answering the
 * parsed value or {@link FAIL}; nothing here is a second definition of the
 * wire, only of how a kind of schema reads a value.
 */

import { isJsonValue } from './json-value.js'

/** A parser: the parsed value, or {@link FAIL}. `k` marks an optional ('o') or defaulted ('d') object field. */
export type P = ((v: unknown) => unknown) & { k?: 'o' | 'd' }

/** The failure marker (undefined can be a parsed value). */
export const FAIL = {}

/** The parsed value, or undefined where `r` is {@link FAIL}. */
export function result<T>(r: unknown): T | undefined {
  return r === FAIL ? undefined : (r as T)
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** zod's isPlainObject: an object whose constructor, if any, has Object's prototype shape. */
function isPlainObject(v: unknown): v is Record<PropertyKey, unknown> {
  if (!isObject(v)) return false
  const ctor = v.constructor
  if (typeof ctor !== 'function') return true
  const proto: unknown = ctor.prototype
  return isObject(proto) && Object.hasOwn(proto, 'isPrototypeOf')
}

function marked(p: P, k: 'o' | 'd'): P {
  p.k = k
  return p
}

export const any: P = (v) => v
export const never: P = () => FAIL
export const bool: P = (v) => (typeof v === 'boolean' ? v : FAIL)

/** A string of `min`..`max` UTF-16 code units matching `re`. */
export function str(min = 0, max = Number.POSITIVE_INFINITY, re?: RegExp): P {
  return (v) => (typeof v === 'string' && v.length >= min && v.length <= max && (!re || re.test(v)) ? v : FAIL)
}

/** A finite number from `lo` to `hi` (inclusive), a safe integer when `int`. */
export function num(int: boolean, lo = Number.NEGATIVE_INFINITY, hi = Number.POSITIVE_INFINITY): P {
  return (v) =>
    typeof v === 'number' && Number.isFinite(v) && (!int || Number.isSafeInteger(v)) && v >= lo && v <= hi ? v : FAIL
}

/** One of `values` (literals, enums and null). */
export function oneOf(...values: unknown[]): P {
  return (v) => (values.includes(v) ? v : FAIL)
}

export function nullable(p: P): P {
  return (v) => (v === null ? v : p(v))
}

/** As an object field: an absent key stays absent. */
export function optional(p: P): P {
  return marked((v) => (v === undefined ? v : p(v)), 'o')
}

/** `fallback()` (a fresh value each time, as zod's clone) for undefined; as an object field, for an absent key too. */
export function withDefault(p: P, fallback: () => unknown): P {
  return marked((v) => {
    const r = v === undefined ? undefined : p(v)
    return r === undefined ? fallback() : r
  }, 'd')
}

export function array(p: P, min = 0, max = Number.POSITIVE_INFINITY): P {
  return (v) => {
    if (!Array.isArray(v) || v.length < min || v.length > max) return FAIL
    const out: unknown[] = []
    for (let i = 0; i < v.length; i++) {
      const r = p(v[i])
      if (r === FAIL) return FAIL
      out.push(r)
    }
    return out
  }
}

/**
 * zod's object: the shape's keys in order (a required key must be present),
 * then the keys it does not name: dropped ('strip'), refused ('strict') or
 * kept as they are ('loose', `__proto__` aside).
 */
export function object(shape: Record<string, P>, mode: 'strip' | 'strict' | 'loose'): P {
  const keys = Object.keys(shape)
  return (v) => {
    if (!isObject(v)) return FAIL
    const out: Record<string, unknown> = {}
    for (const k of keys) {
      const p = shape[k] as P
      const present = k in v
      if (!present && p.k === 'o') continue
      if (!present && p.k === undefined) return FAIL
      const r = p(v[k])
      if (r === FAIL) return FAIL
      out[k] = r
    }
    if (mode !== 'strip') {
      for (const k in v) {
        if (keys.includes(k)) continue
        if (mode === 'strict') return FAIL
        if (k !== '__proto__') out[k] = v[k]
      }
    }
    return out
  }
}

/** The first option that parses. */
export function union(...options: P[]): P {
  return (v) => {
    for (const p of options) {
      const r = p(v)
      if (r !== FAIL) return r
    }
    return FAIL
  }
}

/** A plain object of string keys to `p` (own enumerable keys; `__proto__` dropped, a symbol key fails). */
export function record(p: P): P {
  return (v) => {
    if (!isPlainObject(v)) return FAIL
    const out: Record<string, unknown> = {}
    for (const k of Reflect.ownKeys(v)) {
      if (k === '__proto__' || !Object.prototype.propertyIsEnumerable.call(v, k)) continue
      if (typeof k !== 'string') return FAIL
      const r = p(v[k])
      if (r === FAIL) return FAIL
      out[k] = r
    }
    return out
  }
}

/** Any JSON value, passed through as it is (`flagValueSchema`: a `__proto__` key is data, kept). */
export const json: P = (v) => (isJsonValue(v) ? v : FAIL)

/** `p`, then `then` (a zod transform) on what it parsed. */
export function pipe<T>(p: P, then: (v: T) => unknown): P {
  return (v) => {
    const r = p(v)
    return r === FAIL ? FAIL : then(r as T)
  }
}

/** For recursive schemas: `get` is called when parsing, once everything is defined. */
export function lazy(get: () => P): P {
  return (v) => get()(v)
}
