/**
 * "Test a user" in the dashboard: a project with flags of every type, rules,
 * a segment, prerequisites, rollouts and variants. For 100 seeded random
 * contexts the panel's answers (value, variant, reason) equal what the flag
 * client, connected to the same service with an SDK key, evaluates locally;
 * the rule and bucket are said in words. A context the service refuses shows
 * its 422 next to the field; the context survives a reload. In the flag
 * editor an unsaved edit shows what the test user gets now and with it, and
 * the flag stays unchanged on the server. Keyboard use, axe, 390 px.
 */
import { createFlagClient, type FlagClient } from '@flagsync/flag-client'
import { DECISION_FLAGS, STAFF_CONDITIONS as STAFF } from '@flagsync/test-support/decision-flags'
import fc from 'fast-check'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { axeViolations } from './axe.js'
import { launchChromium, newPage, screenshot } from './browser.js'
import { type ServiceHarness, startService } from './service-harness.js'
import { signIn } from './sign-in.js'

const ADMIN = { email: 'admin@example.com', password: 'test user e2e password' }
const WITHIN = { timeout: 15_000, interval: 25 }

/** Every flag type: the shared decision flags, and a json flag. */
const FLAGS = [
  ...DECISION_FLAGS,
  {
    key: 'layout',
    is_enabled: true,
    flag_type: 'json',
    default_value: { columns: 2 },
    rules: [{ attribute: 'email', operator: 'ends_with', values: ['@acme.test'], variant: { columns: 3 } }],
    rollout_percentage: 60,
  },
]

const contextArb = fc.record(
  {
    user_id: fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), fc.integer({ min: 0, max: 10_000 })),
    country: fc.constantFrom('NL', 'DE', 'FR', 'US'),
    plan: fc.constantFrom('free', 'pro', 'team'),
    age: fc.oneof(fc.integer({ min: 0, max: 99 }), fc.constantFrom('17', 'forty')),
    email: fc.constantFrom('ann@acme.test', 'ops.bo@else.test', 'beta-cy@else.test', 'dee@else.test'),
    beta: fc.boolean(),
  },
  { requiredKeys: [] },
)

let service: ServiceHarness
let browser: Browser
let page: Page
let client: FlagClient
let projectId = ''
let envId = ''
const errors: string[] = []

/** The panel's answers as the page shows them: key → value (JSON), variant column, reason. */
const shownAnswers = (p: Page) =>
  p.locator('table.answers tbody tr').evaluateAll((rows) =>
    rows.map((tr) => ({
      key: tr.getAttribute('data-answer'),
      value: tr.querySelector('.answer-value')?.getAttribute('data-value'),
      variant: tr.querySelectorAll('td')[1]?.textContent,
      reason: tr.getAttribute('data-reason'),
    })),
  )

/** What the flag client evaluates for the same context, in the panel's terms. */
const clientAnswers = (context: Record<string, unknown>) =>
  client.allFlags().map((f) => {
    const local = client.evaluate(f.key, context)
    return {
      key: f.key,
      value: JSON.stringify(local.value ?? null),
      variant: local.variant === undefined ? '—' : String(Number(local.variant) + 1),
      reason: local.reason,
    }
  })

const byKey = <T extends { key: string | null }>(rows: T[]) =>
  [...rows].sort((a, b) => String(a.key).localeCompare(String(b.key)))

beforeAll(async () => {
  service = await startService({ prefix: 'flagsync-e2e-test-user-', admin: ADMIN })
  const created = await service.call<{ id: string; sdk_key: { key: string } }>('POST', '/api/projects', {
    name: 'Shop',
  })
  projectId = created.body.id
  const envs = await service.call<Array<{ id: string; slug: string }>>('GET', `/api/projects/${projectId}/environments`)
  envId = envs.body.find((e) => e.slug === 'production')?.id ?? ''
  const seg = await service.call('POST', `/api/projects/${projectId}/segments`, {
    key: 'staff',
    name: 'Staff',
    rules: STAFF,
  })
  expect(seg.status).toBe(200)
  for (const flag of FLAGS) {
    const res = await service.call('POST', `/api/environments/${envId}/flags`, flag)
    expect(res.status, flag.key).toBe(200)
  }
  client = createFlagClient({ persist: false, streamUrl: `${service.url}/stream`, sdkKey: created.body.sdk_key.key })
  await client.ready()
  browser = await launchChromium()
  page = await newPage(browser, 'admin', errors, { timeoutMs: 30_000 })
  await signIn(page, service.url, ADMIN)
})

afterAll(async () => {
  await client?.close()
  await browser?.close()
  service?.close()
})

describe('test a user in the dashboard', () => {
  it('is used from the keyboard and says what decided each flag in words', async () => {
    await page.goto(`${service.url}/projects/${projectId}?tab=test`)
    await page.getByRole('heading', { name: 'Test a user' }).waitFor()
    await page.getByLabel(/^User id/).focus()
    await page.keyboard.type('u-1')
    await page.keyboard.press('Tab') // past the user id, onto "Add attribute"
    await page.keyboard.press('Enter')
    await page.keyboard.type('country')
    await page.keyboard.press('Tab') // the type stays string
    await page.keyboard.press('Tab')
    await page.keyboard.type('NL')
    await page.keyboard.press('Enter') // submits the form
    const why = (key: string) => page.locator(`tr[data-answer="${key}"] .answer-why`).textContent()
    await expect.poll(() => why('theme'), WITHIN).toBe('rule 1: country is NL')
    const gate = client.evaluate('gate', { user_id: 'u-1', country: 'NL' })
    const bucket = (await why('gate')) ?? ''
    expect(bucket).toMatch(/^bucket \d+ of 100 → (inside|outside) the 50 % rollout/)
    expect(bucket.includes('inside')).toBe(gate.value === true)
    expect(await why('retired')).toBe('the flag is off')
    expect(await axeViolations(page)).toEqual([])
  })

  it('answers 100 random contexts exactly as the flag client evaluates them', async () => {
    const contexts = fc.sample(contextArb, { numRuns: 100, seed: 20261128 })
    await page.getByRole('button', { name: 'Edit as JSON' }).click()
    const reasons = new Set<string>()
    for (const context of contexts) {
      await page.getByLabel('Context as JSON').fill(JSON.stringify(context))
      const answered = page.waitForResponse((r) => r.url().endsWith('/evaluate'))
      await page.getByRole('button', { name: 'Evaluate' }).click()
      expect((await answered).status()).toBe(200)
      const expected = byKey(clientAnswers(context))
      for (const e of expected) reasons.add(e.reason)
      await expect.poll(async () => byKey(await shownAnswers(page)), WITHIN).toEqual(expected)
    }
    expect([...reasons].sort()).toEqual(['DEFAULT', 'DISABLED', 'ERROR', 'SPLIT', 'TARGETING_MATCH'])
  })

  it("shows the service's 422 next to the context and keeps the context across a reload", async () => {
    await page.getByLabel('Context as JSON').fill('{"a":{"b":{"c":{"d":{"e":1}}}}}')
    await page.getByRole('button', { name: 'Evaluate' }).click()
    const alert = page.locator('.context-editor [role="alert"]')
    await expect.poll(() => alert.textContent(), WITHIN).toContain('nested deeper than 4 levels')
    expect(await page.getByLabel('Context as JSON').getAttribute('aria-describedby')).toBe(
      await alert.getAttribute('id'),
    )
    const kept = { user_id: 'u-9', country: 'NL', plan: 'free', email: 'dee@else.test', age: 30 }
    await page.getByLabel('Context as JSON').fill(JSON.stringify(kept))
    await page.reload()
    await page.getByRole('heading', { name: 'Test a user' }).waitFor()
    expect(await page.getByLabel(/^User id/).inputValue()).toBe('u-9')
    await page.getByRole('button', { name: 'Evaluate' }).click()
    await expect
      .poll(() => page.locator('tr[data-answer="theme"]').getAttribute('data-reason'), WITHIN)
      .toBe('TARGETING_MATCH')
    await page.setViewportSize({ width: 390, height: 844 })
    const path = await screenshot(page, 'dashboard-test-user-390')
    expect(path).toMatch(/\.png$/)
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
    expect(overflow).toBeLessThanOrEqual(0)
    expect(await axeViolations(page)).toEqual([])
    await page.setViewportSize({ width: 1280, height: 860 })
  })

  it('shows what the test user gets now and with an unsaved edit; the flag stays as saved', async () => {
    await page.getByRole('tab', { name: 'Flags' }).click()
    await page.getByRole('button', { name: 'Edit theme in Production' }).click()
    const now = page.locator('[data-preview="now"]')
    const draft = page.locator('[data-preview="draft"]')
    const saved = '"dark" (targeting_match, rule 1: country is NL)'
    await expect.poll(() => now.textContent(), WITHIN).toBe(saved)
    // Its own request: it may still show "…" when the saved flag's answer is in.
    await expect.poll(() => draft.textContent(), WITHIN).toBe(saved)
    await page.getByRole('dialog').getByRole('checkbox', { name: 'On', exact: true }).press('Space') // the keyboard switches the draft off
    await expect.poll(() => draft.textContent(), WITHIN).toBe('"off" (disabled, the flag is off)')
    expect(await page.locator('.draft-preview [data-changed]').getAttribute('data-changed')).toBe('true')
    expect(await axeViolations(page)).toEqual([])
    await page.getByRole('button', { name: 'Cancel' }).click()
    const stored = await service.call<{ is_enabled: boolean }>('GET', `/api/environments/${envId}/flags/theme`)
    expect(stored.body.is_enabled).toBe(true)
    expect(client.evaluate('theme', { user_id: 'u-9', country: 'NL' }).value).toBe('dark')
    expect(errors).toEqual([])
  })
})
