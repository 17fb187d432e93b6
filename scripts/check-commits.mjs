// Checks commit messages since the convention took effect (COMMIT_BASE): a subject `type(scope): summary` of at most
// 72 characters, then a blank line and a body that says why. Commits up to COMMIT_BASE predate the rule and are not
// rewritten. `node scripts/check-commits.mjs [rev-range]`; exits 1 naming each offending commit.
import { execFileSync } from 'node:child_process'

const COMMIT_BASE = '6c6b57bbc7fbfa50223453413ede1faec752ac44'
const TYPES = ['build', 'chore', 'ci', 'docs', 'feat', 'fix', 'perf', 'refactor', 'revert', 'style', 'test', 'bench']
const SUBJECT = new RegExp(`^(${TYPES.join('|')})(\\([a-z0-9][a-z0-9-/]*\\))?!?: \\S`)
const MAX_SUBJECT = 72

const git = (...args) => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })

/** The problems of one commit message, as sentences (empty when it follows the convention). */
export function commitMessageProblems(message) {
  const lines = message.replace(/\s+$/, '').split('\n')
  const subject = lines[0] ?? ''
  const problems = []
  if (subject.startsWith('Merge ')) return problems
  if (!SUBJECT.test(subject)) problems.push(`subject is not "type(scope): summary" with a type of ${TYPES.join(', ')}`)
  if (subject.length > MAX_SUBJECT) problems.push(`subject has ${subject.length} characters (at most ${MAX_SUBJECT})`)
  if (lines.length > 1 && lines[1] !== '') problems.push('no blank line between subject and body')
  if (lines.slice(2).join('').trim() === '') problems.push('no body saying why')
  return problems
}

/** `git log` arguments selecting the commits to check. */
function rangeToCheck() {
  const requested = process.argv[2]
  if (requested) return [requested]
  try {
    git('merge-base', '--is-ancestor', COMMIT_BASE, 'HEAD')
    return [`${COMMIT_BASE}..HEAD`]
  } catch {
    // A shallow clone without the base: the newest commit is still checked.
    return ['-1', 'HEAD']
  }
}

function main() {
  const range = rangeToCheck()
  const log = git('log', '--format=%H%x00%B%x01', ...range)
  const commits = log
    .split('\x01')
    .map((entry) => entry.replace(/^\n/, ''))
    .filter((entry) => entry.includes('\x00'))
  let failures = 0
  for (const entry of commits) {
    const [hash = '', message = ''] = entry.split('\x00')
    const problems = commitMessageProblems(message)
    if (problems.length === 0) continue
    failures++
    console.error(`${hash.slice(0, 10)} ${message.split('\n')[0]}\n  - ${problems.join('\n  - ')}`)
  }
  if (failures > 0) {
    console.error(
      `\n${failures} of ${commits.length} commits in ${range.join(' ')} break the commit convention (CONTRIBUTING.md).`,
    )
    process.exit(1)
  }
  console.log(`commit messages: ${commits.length} checked in ${range.join(' ')}, all follow the convention`)
}

if (import.meta.url === `file://${process.argv[1]}`) main()
