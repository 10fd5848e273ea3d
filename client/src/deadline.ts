/**
 * Runs `work` with a signal that aborts after `ms` with a `TimeoutError`, or when `outer` aborts,
 * and once `work` settles clears its timer and aborts what still runs under it (a request beside
 * one that failed would otherwise outlive its deadline). So `work` reads what it needs before it
 * settles. Not `AbortSignal.timeout` or `AbortSignal.any`, which React Native does not have.
 */
export async function withinMs<T>(
  ms: number,
  work: (signal: AbortSignal) => Promise<T>,
  outer?: AbortSignal,
): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(timeoutError()), Math.max(0, Math.round(ms)));
  const abort = () => controller.abort(outer?.reason);
  if (outer?.aborted) abort();
  outer?.addEventListener('abort', abort);
  try {
    return await work(controller.signal);
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', abort);
    controller.abort();
  }
}

function timeoutError(): Error {
  const message = 'The operation was aborted due to timeout';
  if (typeof DOMException === 'function') return new DOMException(message, 'TimeoutError');
  return Object.assign(new Error(message), { name: 'TimeoutError' }); // React Native
}
