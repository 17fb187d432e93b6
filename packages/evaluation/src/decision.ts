/**
 * How a flag resolved for a context, before its value is looked up: `disabled`
 * (switch off or a prerequisite failed), `outside` or `inside` a partial
 * rollout, a matched `rule`, a `variant` of the split, or the `default`.
 */
export type Decision =
  | { readonly kind: 'disabled' | 'outside' | 'inside' | 'default' }
  | { readonly kind: 'rule' | 'variant'; readonly index: number }
