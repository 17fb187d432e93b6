/**
 * The base revision of a flag write and its three-way check: server-kit parses `If-Match` / `base_revision`,
 * the receiver checks the flag against its state at that revision — the same code the flat API calls.
 */
export type { FlagConflict } from '@flagsync/receiver'
export { checkFlagBase, flagConflictError } from '@flagsync/receiver'
export { baseRevisionOf } from '@flagsync/server-kit'
