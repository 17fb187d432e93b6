// @vitest-environment happy-dom

import { describe, expect, it } from 'vitest'
import { createBlocked, deleteBlocked, type User } from '../src/users.js'

const user = (id: number, role: User['role']): User => ({
  id,
  role,
  email: `u${id}@example.com`,
  name: `U${id}`,
  created_at: '2026-01-01T00:00:00.000Z',
})

describe('who may delete a user (and why not)', () => {
  const admin = user(1, 'admin')
  const editor = user(2, 'editor')
  it('workspace admins delete others; not themselves, not the last admin', () => {
    expect(deleteBlocked(admin, editor, [admin, editor], false)).toBeNull()
    expect(deleteBlocked(admin, admin, [admin, editor], false)).toBe('you cannot delete yourself')
    const other = user(3, 'admin')
    expect(deleteBlocked(admin, other, [admin, other], false)).toBeNull()
    expect(deleteBlocked({ id: 9, role: 'admin' }, other, [other], false)).toBe('the last admin')
  })
  it('editors and viewers cannot, and nobody can offline', () => {
    expect(deleteBlocked(editor, admin, [admin, editor], false)).toBe('needs the workspace admin role')
    expect(deleteBlocked(admin, editor, [admin, editor], true)).toBe('needs the service (offline)')
  })
  it('only workspace admins create users, and only online', () => {
    expect(createBlocked(admin, false)).toBeNull()
    expect(createBlocked(editor, false)).toBe('needs the workspace admin role')
    expect(createBlocked(admin, true)).toBe('needs the service (offline)')
  })
})
