// @vitest-environment happy-dom

import { cleanup, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import { draftOf } from '../src/flag-draft.js'
import { FlagFields } from '../src/flag-fields.js'
import { summarizeWeights } from '../src/weights.js'

afterEach(cleanup)

describe("the editor's fields", () => {
  it('label the description as a description: tags are set apart, and a #word in it is only text', () => {
    const draft = { ...draftOf(null), description: 'checkout #payments' }
    render(
      <FlagFields
        draft={draft}
        set={() => {}}
        creation={null}
        weights={summarizeWeights([])}
        segments={[]}
        knownKeys={[]}
      />,
    )
    const description = screen.getByRole('textbox', { name: 'Description' }) as HTMLInputElement
    expect(description.value).toBe('checkout #payments')
    expect(document.body.textContent).not.toMatch(/tags/i)
  })
})
