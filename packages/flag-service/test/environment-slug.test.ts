import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, describe, expect, it } from 'vitest'
import { type Harness, startHarness } from './harness.js'

/** An environment's slug is derived from its name when none is sent, as a project's is. */
describe.each(DIALECTS)('environment slugs on %s', (dialect) => {
  const harnesses: Harness[] = []
  afterEach(async () => {
    for (const h of harnesses.splice(0)) await h.dispose()
  })
  const start = async () => {
    const h = await startHarness(dialect)
    harnesses.push(h)
    return h
  }
  const create = (h: Harness, body: Record<string, unknown>) =>
    h.call(`/api/projects/${h.defaultProjectId}/environments`, { method: 'POST', as: h.admin, body })

  it('derives the slug from the name by the project rule when none is sent', async () => {
    const h = await start()
    const res = await create(h, { name: '  QA Straße Déjà-Vu! ' })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ name: 'QA Straße Déjà-Vu!', slug: 'qa-strasse-deja-vu' })
    const listed = await h.call(`/api/projects/${h.defaultProjectId}/environments`, { as: h.admin })
    expect(listed.body.map((e: { slug: string }) => e.slug)).toContain('qa-strasse-deja-vu')
  })

  it('keeps a slug that is sent, validated as before', async () => {
    const h = await start()
    expect((await create(h, { name: 'QA', slug: 'qa-1' })).body.slug).toBe('qa-1')
    const bad = await create(h, { name: 'QA', slug: 'Not A Slug' })
    expect(bad.status).toBe(422)
    expect(bad.body.issues[0].path).toBe('slug')
  })

  it('a derived slug that exists in the project is a 409; a name with nothing to derive is a 422', async () => {
    const h = await start()
    const taken = await create(h, { name: 'Staging!' }) // the Default project's seeded "staging"
    expect(taken.status).toBe(409)
    expect(taken.body.error).toContain('"staging"')
    const empty = await create(h, { name: '★★★' })
    expect(empty.status).toBe(422)
    expect(empty.body.issues).toEqual([
      {
        path: 'name',
        message: 'must contain at least one letter or digit (a-z, 0-9) to derive a slug, or send a slug',
      },
    ])
  })
})
