// Bundled by browser.mjs with esbuild (minified, like the shipped bundle) for the page: the evaluator and the
// workloads of the Node benchmarks. The sync client is not in here: the page loads the shipped bundle itself.
export { evaluate } from '@flagsync/evaluation'
export { handWritten, lastPerRecord, randomOperations, TARGETED_FLAG, users } from '../lib/workloads.mjs'
