/**
 * A run that concurrent callers share: a call while it runs gets the running promise and has it run once more
 * afterwards (so nothing asked for meanwhile is missed), unless `stopped()`. With `onError`, a failure ends the
 * runs and is handed to it; without, the shared promise rejects.
 */
export function coalescedRun(
  run: () => Promise<unknown>,
  stopped: () => boolean,
  onError?: (err: unknown) => void,
): () => Promise<void> {
  let running: Promise<void> | undefined
  let again = false
  return () => {
    if (running) {
      again = true
      return running
    }
    const runs = (async () => {
      do {
        again = false
        await run()
      } while (again && !stopped())
    })()
    running = (onError ? runs.catch(onError) : runs).finally(() => {
      running = undefined
    })
    return running
  }
}
