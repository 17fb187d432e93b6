import { describe, expect, it } from 'vitest'
import { chosenEnvironments, saveLabel, typeHint } from '../src/flag-draft.js'

describe('the flag editor as labels and targets', () => {
  it('chooses every environment in order for "all", or just the one named', () => {
    const envs = [{ id: 'dev' }, { id: 'staging' }, { id: 'prod' }]
    expect(chosenEnvironments(envs, 'all').map((e) => e.id)).toEqual(['dev', 'staging', 'prod'])
    expect(chosenEnvironments(envs, 'prod').map((e) => e.id)).toEqual(['prod'])
    expect(chosenEnvironments(envs, 'gone')).toEqual([])
  })
  it('names the values of each type as the value labels show them', () => {
    expect(typeHint('boolean')).toBe('true or false')
    expect(typeHint('json')).toBe('JSON')
    expect(typeHint('string')).toBe('string')
    expect(typeHint('integer')).toBe('integer')
  })
  it('labels the submit by what it does: queue offline, create, request a change, or save', () => {
    expect(saveLabel(true, true, false)).toBe('Queue new flag')
    expect(saveLabel(true, false, true)).toBe('Queue changes')
    expect(saveLabel(false, true, true)).toBe('Create flag')
    expect(saveLabel(false, false, true)).toBe('Request change')
    expect(saveLabel(false, false, false)).toBe('Save')
  })
})
