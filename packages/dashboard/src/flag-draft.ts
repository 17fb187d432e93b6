import {
  type FlagType,
  type FlagValue,
  type FullTargetingRule,
  type Operator,
  operatorSchema,
} from '@flagsync/protocol'
import type { Flag } from './types.js'
import { parseValue, valueText } from './values.js'

/** The flag service's nine operators, in the protocol's order. */
export const OPERATORS: readonly Operator[] = operatorSchema.options

export interface RuleDraft {
  kind: 'attribute' | 'segment'
  attribute: string
  operator: Operator
  /** Comma-separated. */
  values: string
  segmentKey: string
  /** Empty: the rule serves the flag's default (on). */
  variant: string
}

export interface Draft {
  key: string
  description: string
  type: FlagType
  enabled: boolean
  /** Empty: no rollout limit. */
  rollout: string
  defaultValue: string
  disabledValue: string
  variants: Array<{ value: string; weight: string }>
  rules: RuleDraft[]
  prerequisites: Array<{ key: string; required: string }>
}

export function draftOf(flag: Flag | null): Draft {
  const type = flag?.flag_type ?? 'boolean'
  const text = (v: FlagValue | undefined) => (v === undefined ? '' : valueText(type, v))
  return {
    key: flag?.key ?? '',
    description: flag?.description ?? '',
    type,
    enabled: flag?.is_enabled ?? false,
    rollout:
      flag?.rollout_percentage === null || flag?.rollout_percentage === undefined
        ? ''
        : String(flag.rollout_percentage),
    defaultValue: text(flag?.default_value),
    disabledValue: text(flag?.disabled_value),
    variants: (flag?.variants ?? []).map((v) => ({ value: valueText(type, v.value), weight: String(v.weight) })),
    rules: (flag?.rules ?? []).map((r) => ({
      kind: r.segment_key ? 'segment' : 'attribute',
      attribute: r.attribute ?? '',
      operator: r.operator ?? 'equals',
      values: (r.values ?? []).join(', '),
      segmentKey: r.segment_key ?? '',
      variant: r.variant === undefined ? '' : valueText(type, r.variant),
    })),
    prerequisites: (flag?.prerequisites ?? []).map((p) => ({
      key: p.flag_key,
      required: p.required_value === undefined ? '' : JSON.stringify(p.required_value),
    })),
  }
}

export interface BuiltFlag {
  key: string
  is_enabled: boolean
  description: string | null
  flag_type: FlagType
  rollout_percentage: number | null
  default_value?: FlagValue
  disabled_value?: FlagValue
  variants: Array<{ value: FlagValue; weight: number }>
  rules: FullTargetingRule[]
  prerequisites: Array<{ flag_key: string; required_value?: FlagValue }>
}

/**
 * The flag body a draft stands for, or the problems that keep it from being
 * saved, each naming its field as the person sees it. Only shape and typing
 * are checked here; the service checks the rest (prerequisites exist, no
 * cycle, segments) and its 422 is shown as it comes.
 */
export function buildFlag(d: Draft): { flag: BuiltFlag; problems: string[] } {
  const problems: string[] = []
  const typed = (label: string, text: string): FlagValue | undefined => {
    if (text === '') return undefined
    const parsed = parseValue(d.type, text)
    if (!parsed.ok) problems.push(`${label} must be ${parsed.error}`)
    return parsed.ok ? parsed.value : undefined
  }
  let rollout: number | null = null
  if (d.rollout.trim() !== '') {
    rollout = Number(d.rollout)
    if (!Number.isInteger(rollout) || rollout < 0 || rollout > 100)
      problems.push('Rollout must be a whole number from 0 to 100')
  }
  const flag: BuiltFlag = {
    key: d.key.trim(),
    is_enabled: d.enabled,
    description: d.description.trim() === '' ? null : d.description,
    flag_type: d.type,
    rollout_percentage: rollout,
    variants: d.variants.map((v, i) => ({
      value: typed(`Variant ${i + 1}'s value`, v.value) ?? null,
      weight: Number(v.weight),
    })),
    rules: d.rules.map((r, i) => {
      const variant = typed(`Rule ${i + 1}'s variant`, r.variant)
      const extra = variant === undefined ? {} : { variant }
      if (r.kind === 'segment') {
        if (!r.segmentKey) problems.push(`Rule ${i + 1} needs a segment`)
        return { segment_key: r.segmentKey, ...extra }
      }
      const values = r.values
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== '')
      if (!r.attribute.trim()) problems.push(`Rule ${i + 1} needs an attribute`)
      if (values.length === 0) problems.push(`Rule ${i + 1} needs at least one value`)
      return { attribute: r.attribute.trim(), operator: r.operator, values, ...extra }
    }),
    prerequisites: d.prerequisites.map((p, i) => {
      if (p.required.trim() === '') return { flag_key: p.key }
      try {
        return { flag_key: p.key, required_value: JSON.parse(p.required) as FlagValue }
      } catch {
        problems.push(`Prerequisite ${i + 1}'s required value must be JSON (true, 3, "blue")`)
        return { flag_key: p.key }
      }
    }),
  }
  const def = typed('Default value', d.defaultValue)
  if (def !== undefined) flag.default_value = def
  const off = typed('Disabled value', d.disabledValue)
  if (off !== undefined) flag.disabled_value = off
  if (d.variants.some((v) => v.value.trim() === '' && d.type !== 'string')) problems.push('Every variant needs a value')
  return { flag, problems }
}

/** The PATCH for an existing flag: every editable top-level field, `null` removing an emptied value (RFC 7396). */
export function patchOf(flag: BuiltFlag): Record<string, unknown> {
  const { key: _key, ...fields } = flag
  return { ...fields, default_value: flag.default_value ?? null, disabled_value: flag.disabled_value ?? null }
}

/**
 * The merge patch that turns `base` into `flag`: only the fields that differ.
 * Queued offline, a patch naming only what was edited is what lets the sync
 * route merge it onto changes others made meanwhile, and report a conflict
 * only on a field both sides changed.
 */
export function changesOf(base: BuiltFlag, flag: BuiltFlag): Record<string, unknown> {
  const before = patchOf(base)
  const changes: Record<string, unknown> = {}
  for (const [field, value] of Object.entries(patchOf(flag))) {
    if (JSON.stringify(value) !== JSON.stringify(before[field])) changes[field] = value
  }
  return changes
}

/** An insert's record (the flat API's sync batch): the whole flag, without the fields left empty. */
export function recordOf(flag: BuiltFlag): Record<string, unknown> {
  return Object.fromEntries(Object.entries(flag).filter(([, v]) => v !== undefined))
}

/** The environments a choice of "every environment" (`'all'`) or one environment id stands for, in their order. */
export function chosenEnvironments<T extends { id: string }>(environments: readonly T[], where: 'all' | string): T[] {
  return environments.filter((e) => where === 'all' || e.id === where)
}

/** How the editor names the values a flag of `type` takes, in its value labels. */
export function typeHint(type: FlagType): string {
  return type === 'json' ? 'JSON' : type === 'boolean' ? 'true or false' : type
}

/** The editor's submit button: offline it queues; online an environment that requires approval files a request. */
export function saveLabel(offline: boolean, creating: boolean, requiresApproval: boolean): string {
  if (offline) return creating ? 'Queue new flag' : 'Queue changes'
  if (creating) return 'Create flag'
  return requiresApproval ? 'Request change' : 'Save'
}
