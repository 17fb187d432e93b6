// The flags the evaluation tests and the test-a-user e2e compare the service's answers on: the service's evaluate
// route and the flag client must agree on every one of them.

/**
 * Flags that exercise every decision: rules of each operator, a segment rule (`staff`, see `STAFF_CONDITIONS`),
 * prerequisites, rollouts and weighted variants; created in this order (prerequisites first).
 */
export const DECISION_FLAGS = [
  { key: 'gate', is_enabled: true, rollout_percentage: 50 },
  {
    key: 'theme',
    is_enabled: true,
    flag_type: 'string',
    default_value: 'light',
    disabled_value: 'off',
    rollout_percentage: 80,
    rules: [
      { attribute: 'country', operator: 'equals', values: ['NL'], variant: 'dark' },
      { segment_key: 'staff', variant: 'staff' },
      { attribute: 'plan', operator: 'not_equals', values: ['free'], variant: 'paid' },
    ],
    variants: [
      { value: 'blue', weight: 3 },
      { value: 'green', weight: 1 },
    ],
  },
  {
    key: 'checkout-v2',
    is_enabled: true,
    prerequisites: [{ flag_key: 'gate' }],
    rules: [{ attribute: 'age', operator: 'greater_than_or_equal', values: ['40'] }],
    rollout_percentage: 30,
  },
  {
    key: 'limit',
    is_enabled: true,
    flag_type: 'integer',
    default_value: 10,
    disabled_value: 0,
    prerequisites: [{ flag_key: 'theme', required_value: 'dark' }],
    rules: [
      { attribute: 'age', operator: 'less_than', values: ['18'], variant: 1 },
      { attribute: 'age', operator: 'greater_than', values: ['60'], variant: 5 },
      { attribute: 'age', operator: 'less_than_or_equal', values: ['20'], variant: 2 },
    ],
  },
  {
    key: 'banner',
    is_enabled: true,
    flag_type: 'string',
    default_value: 'none',
    rules: [{ attribute: 'email', operator: 'contains', values: ['beta'], variant: 'beta' }],
    variants: [
      { value: 'a', weight: 1 },
      { value: 'b', weight: 1 },
      { value: 'c', weight: 2 },
    ],
  },
  { key: 'retired', is_enabled: false, rules: [{ attribute: 'country', operator: 'equals', values: ['DE'] }] },
]

/** The conditions of the `staff` segment the flags' rules name (any one places a user in it). */
export const STAFF_CONDITIONS = [
  { attribute: 'email', operator: 'ends_with', values: ['@acme.test'] },
  { attribute: 'email', operator: 'starts_with', values: ['ops.'] },
]
