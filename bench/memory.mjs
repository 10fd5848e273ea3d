// Peak resident memory of the service during a measurement: VmHWM (reset at the start through
// /proc/<pid>/clear_refs where allowed) together with VmRSS sampled every few hundred ms.

export const MIB = 1024 * 1024;

/**
 * @param {import('./server.mjs').Service} service
 * @param {number} [intervalMs]
 */
export function watchPeakMemory(service, intervalMs = 200) {
  const hwmReset = service.resetPeakMemory();
  let peakSampled = 0;
  const sample = () => {
    try {
      peakSampled = Math.max(peakSampled, service.memory().rss);
    } catch {
      // the process is gone; stop() reports what was seen
    }
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    /** @returns {{ peak_rss_mib: number, source: string }} */
    stop() {
      clearInterval(timer);
      sample();
      const hwm = hwmReset ? service.memory().hwm : 0;
      return {
        peak_rss_mib: round(Math.max(hwm, peakSampled) / MIB),
        source: hwmReset ? 'VmHWM (reset at start) and VmRSS samples' : 'VmRSS samples',
      };
    },
  };
}

/** @param {number} value */
export const round = (value, digits = 1) => {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
};
