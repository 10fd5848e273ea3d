import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// `npm start` runs its script with `sh -c`, and npm hands a SIGTERM it gets to that shell. A shell
// that does not forward it (dash, Debian's /bin/sh) left the service running without its npm: a
// process manager's stop did not stop it, and the next start failed on the taken port. The script
// must make the service the shell's own process (exec). A stand-in takes dist/main.cjs's place.

const STAND_IN = `
process.on('SIGTERM', () => { console.log('SIGTERM'); process.exit(0); });
console.log('ready');
setInterval(() => undefined, 1_000);
`;

describe.skipIf(process.platform === 'win32')("npm start's script", () => {
  const dir = mkdtempSync(join(tmpdir(), 'start-script-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('hands a SIGTERM sent to its shell to the service', { timeout: 15_000 }, async () => {
    const standIn = join(dir, 'main.cjs');
    writeFileSync(standIn, STAND_IN);
    const script = (
      JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }
    ).scripts.start;
    expect(script).toContain('dist/main.cjs');
    // bash (a /bin/sh elsewhere) replaces itself by a lone command even without exec; dash does not.
    expect(script).toMatch(/^exec /);
    // Its own process group, so that whatever it leaves can be killed with it.
    const shell = spawn('/bin/sh', ['-c', script.replace('dist/main.cjs', standIn)], {
      detached: true,
      env: { PATH: `${join(process.execPath, '..')}:${process.env.PATH ?? ''}` },
    });
    let output = '';
    shell.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const closed = once(shell, 'close'); // its output read to the end
    await expect.poll(() => output, { timeout: 5_000 }).toContain('ready');
    shell.kill('SIGTERM');
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 3_000))]);
    try {
      process.kill(-(shell.pid as number), 'SIGKILL'); // a stand-in left running, if any
    } catch {
      // The group is gone: nothing was left.
    }
    expect(output).toContain('SIGTERM');
  });
});
