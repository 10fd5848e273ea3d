// Raw argon2id speed in the bench process, with the service's own parameters: the ceiling of login,
// which does one verify per request.
import { performance } from 'node:perf_hooks';
import { hash, verify } from '@node-rs/argon2';
import { ARGON2_PARAMETERS } from '../dist/security/password-hashing.js';
import { PASSWORDS } from './seed.mjs';

export { ARGON2_PARAMETERS };

/**
 * `concurrency` loops verifying one hash for `durationSeconds`.
 * @param {{ concurrency: number, durationSeconds: number, stored?: string }} options
 */
export async function measureRawVerify({ concurrency, durationSeconds, stored }) {
  const password = PASSWORDS[0];
  stored ??= await storedHash();
  let count = 0;
  let all = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const deadline = started + durationSeconds * 1000;
  const loop = async () => {
    while (performance.now() < deadline) {
      if (!(await verify(stored, password))) throw new Error('argon2 verify failed');
      all += 1;
      if (performance.now() <= deadline) count += 1;
    }
  };
  // Counts what completed inside the window (as autocannon does), but waits for the verifies still
  // running at its end, so that they do not overlap the next measurement.
  await Promise.all(Array.from({ length: concurrency }, loop));
  const seconds = durationSeconds;
  const cpu = process.cpuUsage(cpuBefore);
  return {
    verifies_per_second: Math.round((count / seconds) * 10) / 10,
    verifies: count,
    seconds: Math.round(seconds * 100) / 100,
    cpu_ms: (cpu.user + cpu.system) / 1000,
    all_verifies: all,
    cpu_ms_per_verify: Math.round(((cpu.user + cpu.system) / 1000 / all) * 100) / 100,
    concurrency,
    parameters: { ...ARGON2_PARAMETERS },
    threadpool_size: Number(process.env.UV_THREADPOOL_SIZE ?? 4),
  };
}

/** A hash of the password login uses, made with the service's parameters (and verified once). */
export async function storedHash() {
  const stored = await hash(PASSWORDS[0], ARGON2_PARAMETERS);
  await verify(stored, PASSWORDS[0]);
  return stored;
}

/**
 * One figure from slices measured at different times (between slices of the login scenario, so
 * that both sides of the ratio see the same machine, however busy it is).
 * @param {Awaited<ReturnType<typeof measureRawVerify>>[]} parts
 */
export function combineRawVerify(parts) {
  const sum = (pick) => parts.reduce((total, part) => total + pick(part), 0);
  const verifies = sum((p) => p.verifies);
  const seconds = sum((p) => p.seconds);
  const cpuMs = sum((p) => p.cpu_ms);
  const allVerifies = sum((p) => p.all_verifies);
  return {
    ...parts[0],
    verifies_per_second: Math.round((verifies / seconds) * 10) / 10,
    verifies,
    seconds: Math.round(seconds * 100) / 100,
    cpu_ms: Math.round(cpuMs),
    all_verifies: allVerifies,
    cpu_ms_per_verify: Math.round((cpuMs / allVerifies) * 100) / 100,
    slices: parts.map((p) => p.verifies_per_second),
  };
}
