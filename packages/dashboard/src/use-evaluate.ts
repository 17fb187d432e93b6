import { useMutation, useQuery } from '@tanstack/react-query'
import { api } from './api.js'
import { queryKeys } from './query-keys.js'
import type { Evaluated, TestContext } from './test-context.js'

/** The body of the evaluate route: a context, optionally some keys and unsaved flags in place of the saved ones. */
export interface EvaluateBody {
  context: TestContext
  keys?: string[]
  flags?: unknown[]
}

const evaluateIn = (envId: string, body: EvaluateBody) =>
  api<{ flags: Evaluated[] }>('POST', `/api/environments/${encodeURIComponent(envId)}/evaluate`, body)

/** "Test a user": every flag of an environment for a context, on demand (the panel's Evaluate). */
export function useEvaluate(envId: string) {
  return useMutation({ mutationFn: (body: EvaluateBody) => evaluateIn(envId, body) })
}

/**
 * One flag for a context, kept per body: the editor asks for the saved flag and
 * for its draft (`flags: [draft]`), and a draft typed back to an earlier state is answered from the cache.
 */
export function useEvaluation(envId: string, body: EvaluateBody | null) {
  return useQuery({
    queryKey: queryKeys.evaluation(envId, body),
    queryFn: () => evaluateIn(envId, body as EvaluateBody),
    enabled: body !== null,
    staleTime: 10_000,
    placeholderData: (previous) => previous,
  })
}
