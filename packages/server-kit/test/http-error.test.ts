import { HttpError, STATUS_BY_CODE, secretsEqual, secretsMatcher, toHttpError } from '@flagsync/server-kit'
import { StoreError } from '@flagsync/store'
import { describe, expect, it } from 'vitest'

describe('toHttpError', () => {
  it('keeps an HttpError as it is', () => {
    const e = new HttpError('conflict', 'taken')
    expect(toHttpError(e)).toBe(e)
    expect(e.status).toBe(409)
  })

  it('maps body-parser failures to client errors', () => {
    expect(toHttpError(Object.assign(new Error('x'), { type: 'entity.parse.failed' })).status).toBe(400)
    expect(toHttpError(Object.assign(new Error('x'), { type: 'entity.too.large' })).status).toBe(413)
  })

  it('keeps the code of a store error and its retry hint, hiding internals', () => {
    const busy = toHttpError(new StoreError('unavailable', 'locked'))
    expect(busy.status).toBe(503)
    expect(busy.details.retryAfterSeconds).toBe(1)
    const internal = toHttpError(new StoreError('internal', 'syntax error near "drop"'))
    expect(internal.status).toBe(500)
    expect(internal.message).toBe('internal error')
  })

  it('turns unknown throwables into an opaque 500', () => {
    for (const thrown of [new TypeError('secret detail'), 'string', null, 42]) {
      const e = toHttpError(thrown)
      expect(e.status).toBe(500)
      expect(JSON.stringify(e.toBody())).not.toContain('secret')
    }
  })

  it('keeps the 412 and 416 of a static file as precondition_failed and range_not_satisfiable', () => {
    const failed = toHttpError(Object.assign(new Error('Precondition Failed'), { status: 412, expose: true }))
    expect([failed.status, failed.code]).toEqual([412, 'precondition_failed'])
    const range = toHttpError(Object.assign(new Error('Range Not Satisfiable'), { status: 416, expose: true }))
    expect([range.status, range.code]).toEqual([416, 'range_not_satisfiable'])
  })

  it('has a status for every code', () => {
    for (const status of Object.values(STATUS_BY_CODE)) expect(status).toBeGreaterThanOrEqual(400)
  })
})

describe('secretsEqual', () => {
  it('compares secrets of any length', () => {
    expect(secretsEqual('abc', 'abc')).toBe(true)
    expect(secretsEqual('abc', 'abcd')).toBe(false)
    expect(secretsEqual('', 'abc')).toBe(false)
  })
})

describe('secretsMatcher', () => {
  it('admits exactly the given secrets, skipping undefined ones', () => {
    const isKey = secretsMatcher(['sdk-key', undefined, 'client-key'])
    expect(['sdk-key', 'client-key'].map(isKey)).toEqual([true, true])
    expect(['sdk-ke', 'sdk-keyx', '', 'undefined'].map(isKey)).toEqual([false, false, false, false])
    expect(secretsMatcher([])('anything')).toBe(false)
  })

  it('refuses a key one character off anywhere, and hashes keys as UTF-8', () => {
    const key = 'sk_live_9f8e7d6c5b4a3928€ü'
    const isKey = secretsMatcher([key])
    expect(isKey(key)).toBe(true)
    for (let i = 0; i < key.length; i++) {
      const wrong = key.slice(0, i) + String.fromCharCode(key.charCodeAt(i) ^ 1) + key.slice(i + 1)
      expect(isKey(wrong), wrong).toBe(false)
      expect(secretsEqual(wrong, key), wrong).toBe(false)
    }
    // '€' and '¬' (U+20AC, U+00AC) share their low byte: only their UTF-8 bytes tell them apart.
    expect(secretsMatcher(['a€'])('a¬')).toBe(false)
    expect(secretsEqual('a€', 'a¬')).toBe(false)
  })
})
