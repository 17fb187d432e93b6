/** The problems of one commit message, as sentences (empty when it follows the convention). */
export function commitMessageProblems(message: string): string[]
