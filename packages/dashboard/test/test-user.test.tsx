// @vitest-environment happy-dom

import { act, cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { LiveFlags } from '../src/live-flags.js'
import {
  contextOfRows,
  decisionText,
  type Evaluated,
  loadTestContext,
  rowsOfContext,
  saveTestContext,
} from '../src/test-context.js'
import { TestUser } from '../src/test-user.js'
import type { Environment, Flag } from '../src/types.js'
import { QueryWrapper, resetQueryClient } from './query-wrapper.js'

afterEach(() => {
  cleanup()
  resetQueryClient()
  vi.unstubAllGlobals()
  localStorage.clear()
})

const settle = () => act(async () => new Promise((resolve) => setTimeout(resolve, 20)))

const prod: Environment = {
  id: 'env-prod',
  name: 'Production',
  slug: 'production',
  color: '#888',
  is_default: true,
  require_approval: false,
  created_at: '2026-11-25T00:00:00Z',
}
const flag = (over: Partial<Flag>): Flag => ({
  key: 'theme',
  is_enabled: true,
  rollout_percentage: null,
  description: null,
  flag_type: 'boolean',
  rules: [],
  variants: [],
  prerequisites: [],
  ...over,
})

describe('test contexts', () => {
  it('reads typed rows as a context and refuses a row that is not what its type says', () => {
    const rows = rowsOfContext({ user_id: 'u-1', age: 42, beta: true, country: 'NL' })
    expect(rows.map((r) => [r.name, r.type, r.value])).toEqual([
      ['user_id', 'string', 'u-1'],
      ['age', 'number', '42'],
      ['beta', 'boolean', 'true'],
      ['country', 'string', 'NL'],
    ])
    expect(contextOfRows(rows)).toEqual({ context: { user_id: 'u-1', age: 42, beta: true, country: 'NL' } })
    expect(contextOfRows([...rows, { name: 'age', type: 'string', value: 'x' }])).toEqual({
      error: 'age is listed twice',
      row: 4,
    })
    expect(contextOfRows([{ name: 'age', type: 'number', value: 'forty' }])).toEqual({
      error: 'age must be a number',
      row: 0,
    })
    // An empty user id is no attribute: the service then answers a split with TARGETING_KEY_MISSING.
    expect(contextOfRows(rowsOfContext({}))).toEqual({ context: {} })
  })

  it('keeps one context per environment', () => {
    saveTestContext('a', { user_id: 'u-1' })
    saveTestContext('b', { user_id: 'u-2', plan: 'pro' })
    expect(loadTestContext('a')).toEqual({ user_id: 'u-1' })
    expect(loadTestContext('b')).toEqual({ user_id: 'u-2', plan: 'pro' })
    expect(loadTestContext('c')).toBeNull()
  })

  it('says what decided an answer: the rule, the bucket against the rollout, the variant, the switch', () => {
    const base = { key: 'f', value: true, variant: null }
    const rule = { attribute: 'country', operator: 'equals', values: ['NL'] }
    expect(decisionText({ ...base, reason: 'TARGETING_MATCH', rule_index: 0, rule })).toBe('rule 1: country is NL')
    // The service's rule_index counts a segment's conditions; `rule.index` is the rule as the editor numbers it.
    const staff = { attribute: 'email', operator: 'ends_with', values: ['@acme.test'], index: 1, segment_key: 'staff' }
    expect(decisionText({ ...base, reason: 'TARGETING_MATCH', rule_index: 2, rule: staff })).toBe(
      'rule 2 (segment `staff`): email ends with @acme.test',
    )
    const rollout = { is_enabled: true, rollout_percentage: 25 }
    expect(decisionText({ ...base, reason: 'SPLIT', bucket: 12 }, rollout)).toBe(
      'bucket 12 of 100 → inside the 25 % rollout',
    )
    expect(decisionText({ ...base, value: false, reason: 'SPLIT', bucket: 37 }, rollout)).toBe(
      'bucket 37 of 100 → outside the 25 % rollout: its off value',
    )
    const variants = {
      is_enabled: true,
      variants: [
        { value: 'a', weight: 3 },
        { value: 'b', weight: 1 },
      ],
    }
    expect(decisionText({ ...base, value: 'b', variant: '1', reason: 'SPLIT', bucket: 80 }, variants)).toBe(
      'variant 2 (25 % of everyone)',
    )
    expect(
      decisionText(
        { ...base, value: 'a', variant: '0', reason: 'SPLIT', bucket: 10 },
        { ...variants, rollout_percentage: 50 },
      ),
    ).toBe('bucket 10 of 100 → inside the 50 % rollout, variant 1 (75 % of the 50 % rollout)')
    expect(decisionText({ ...base, reason: 'DISABLED' }, { is_enabled: true })).toBe(
      'a prerequisite is not met: its off value',
    )
    expect(decisionText({ ...base, reason: 'DISABLED' }, { is_enabled: false })).toBe('the flag is off')
    expect(decisionText({ ...base, value: null, reason: 'ERROR', error: 'TARGETING_KEY_MISSING' })).toBe(
      "error TARGETING_KEY_MISSING: it splits users and the context has no user_id; the app's fallback applies",
    )
  })
})

function live(flags: Flag[]): LiveFlags {
  const saved = new Map([[prod.id, new Map(flags.map((f) => [f.key, f]))]])
  return new LiveFlags([prod.id], { read: () => saved, write: () => {} })
}

/** A service whose evaluate route answers `answer(body)`; records the bodies. */
function stubEvaluate(answer: (body: { context: Record<string, unknown> }) => { status: number; body: unknown }) {
  const bodies: unknown[] = []
  vi.stubGlobal('fetch', async (_path: string, init: RequestInit) => {
    const body = JSON.parse(String(init.body))
    bodies.push(body)
    const res = answer(body)
    return new Response(JSON.stringify(res.body), {
      status: res.status,
      headers: { 'content-type': 'application/json' },
    })
  })
  return bodies
}

describe('the test-a-user panel', () => {
  it('evaluates the typed context and shows each flag with what decided it, keeping the context', async () => {
    const answers: Evaluated[] = [
      { key: 'gate', value: true, variant: null, reason: 'SPLIT', bucket: 12 },
      {
        key: 'theme',
        value: 'dark',
        variant: null,
        reason: 'TARGETING_MATCH',
        rule_index: 0,
        rule: { attribute: 'country', operator: 'equals', values: ['NL'] },
      },
    ]
    const bodies = stubEvaluate(() => ({ status: 200, body: { flags: answers } }))
    const flags = [flag({ key: 'gate', rollout_percentage: 25 }), flag({ key: 'theme', flag_type: 'string' })]
    render(<TestUser environments={[prod]} live={live(flags)} offline={false} />, { wrapper: QueryWrapper })
    fireEvent.change(screen.getByLabelText(/^User id/), { target: { value: 'u-7' } })
    fireEvent.click(screen.getByRole('button', { name: 'Add attribute' }))
    fireEvent.change(screen.getByLabelText('Attribute'), { target: { value: 'country' } })
    fireEvent.change(screen.getByLabelText('Value'), { target: { value: 'NL' } })
    fireEvent.click(screen.getByRole('button', { name: 'Evaluate' }))
    await settle()
    expect(bodies).toEqual([{ context: { user_id: 'u-7', country: 'NL' } }])
    const why = (key: string) => document.querySelector(`tr[data-answer="${key}"] .answer-why`)?.textContent
    expect(why('gate')).toBe('bucket 12 of 100 → inside the 25 % rollout')
    expect(why('theme')).toBe('rule 1: country is NL')
    expect(loadTestContext(prod.id)).toEqual({ user_id: 'u-7', country: 'NL' })
  })

  it("shows the service's 422 next to the context, and a bad number before asking", async () => {
    saveTestContext(prod.id, { user_id: 'u-1', age: 3 })
    const refusal = {
      error: 'invalid evaluation request: context: nested deeper than 4 levels',
      code: 'validation_failed',
      issues: [{ path: 'context', message: 'nested deeper than 4 levels' }],
    }
    const bodies = stubEvaluate(() => ({ status: 422, body: refusal }))
    render(<TestUser environments={[prod]} live={live([])} offline={false} />, { wrapper: QueryWrapper })
    // The saved context came back.
    expect((screen.getByLabelText(/^User id/) as HTMLInputElement).value).toBe('u-1')
    fireEvent.change(screen.getAllByLabelText('Value')[0] as HTMLElement, { target: { value: 'three' } })
    fireEvent.click(screen.getByRole('button', { name: 'Evaluate' }))
    await settle()
    expect(bodies).toEqual([])
    expect(screen.getByRole('alert').textContent).toBe('age must be a number')
    fireEvent.click(screen.getByRole('button', { name: 'Edit as JSON' }))
    fireEvent.change(screen.getByLabelText('Context as JSON'), {
      target: { value: '{"a":{"b":{"c":{"d":{"e":1}}}}}' },
    })
    fireEvent.click(screen.getByRole('button', { name: 'Evaluate' }))
    await settle()
    const alert = screen.getByRole('alert')
    expect(alert.textContent).toBe(refusal.error)
    expect(screen.getByLabelText('Context as JSON').getAttribute('aria-describedby')).toBe(alert.id)
  })
})
