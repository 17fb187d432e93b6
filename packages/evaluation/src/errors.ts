import type { EvaluationErrorCode } from './types.js'

/** Thrown inside evaluation when a flag cannot be evaluated; `evaluate` turns it into an ERROR result. */
export class EvaluationError extends Error {
  readonly code: EvaluationErrorCode

  constructor(code: EvaluationErrorCode, message: string) {
    super(message)
    this.name = 'EvaluationError'
    this.code = code
  }
}

/**
 * Thrown when a prerequisite chain comes back to a flag already on it. It
 * unwinds the whole chain: `evaluate` then serves the evaluated flag's
 * disabled result, whichever flag of the chain the cycle was found at.
 */
export class PrerequisiteCycle extends Error {
  constructor(path: readonly string[]) {
    super(`prerequisite cycle: ${path.join(' -> ')}`)
    this.name = 'PrerequisiteCycle'
  }
}
