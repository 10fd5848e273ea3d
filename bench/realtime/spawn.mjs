// `npm run bench` runs the real-time scenarios too (its `realtime` key): bench/realtime.mjs in a
// process of its own, once the HTTP scenarios' service has stopped, so that the two never share
// the machine. It writes its own report (bench/results/latest-realtime-*.{json,md}).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ENTRY = fileURLToPath(new URL('../realtime.mjs', import.meta.url));

/**
 * @param {{ seconds?: string, cpuProf: boolean }} options   `seconds`: each load window
 *   (npm run bench's --duration, when given)
 */
export async function runRealtimeBench({ seconds, cpuProf }) {
  const args = [ENTRY];
  if (seconds !== undefined) args.push('--seconds', seconds);
  if (cpuProf) args.push('--cpu-prof');
  console.log('\nreal-time scenarios (bench/realtime.mjs) …');
  const child = spawn(process.execPath, args, { stdio: 'inherit' });
  const code = await new Promise((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`bench/realtime.mjs exited with ${code}`);
}
