// SQLite on a disk the kernel remounts read-only under the running service (ext4's
// errors=remount-ro after a disk error): writes answer 503 (the database is away for them) with
// the outage logged once, not 500 with a stack per request, and /readyz takes the instance out.
// Needs root, mkfs.ext4 and loop devices (CI's machine has them); skipped, saying so, elsewhere.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STRONG_PASSWORD, TestApp, uniqueEmail } from '../helpers/test-app.js';

const IMAGE = join(tmpdir(), `read-only-disk-${process.pid}.img`);
const MOUNT = join(tmpdir(), `read-only-disk-${process.pid}`);

/** Mounts a fresh ext4 image with errors=remount-ro; the loop device's name, or why not. */
function mountDisk(): { loop: string } | { skipped: string } {
  if (process.getuid?.() !== 0) return { skipped: 'not root' };
  try {
    execFileSync('truncate', ['-s', '64M', IMAGE]);
    execFileSync('mkfs.ext4', ['-q', '-F', IMAGE]);
    mkdirSync(MOUNT, { recursive: true });
    execFileSync('mount', ['-o', 'loop,errors=remount-ro', IMAGE, MOUNT], { stdio: 'pipe' });
  } catch (error) {
    return { skipped: `cannot mount a loop device (${(error as Error).message.split('\n')[0]})` };
  }
  const loop = basename(execFileSync('losetup', ['-j', IMAGE]).toString().split(':')[0] ?? '');
  if (!existsSync(`/sys/fs/ext4/${loop}/trigger_fs_error`))
    return { skipped: 'no trigger_fs_error' };
  return { loop };
}

const disk = mountDisk();
if ('skipped' in disk) console.warn(`skipping test/db/sqlite-read-only-disk: ${disk.skipped}`);

describe.skipIf('skipped' in disk)('SQLite on a disk remounted read-only', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start({
      env: { DATABASE_URL: `sqlite:${MOUNT}/auth.db` },
      drop: async () => {},
    });
  });
  afterAll(async () => {
    await t?.close();
    execFileSync('umount', ['-l', MOUNT]);
    rmSync(MOUNT, { recursive: true, force: true });
    rmSync(IMAGE, { force: true });
  });

  it('answers writes 503 and /readyz 503, logging the outage once, no stack per request', async () => {
    await t.register();
    expect((await t.call('GET', '/readyz')).statusCode).toBe(200);
    // What ext4 does on a disk error with errors=remount-ro: the file system turns read-only.
    writeFileSync(`/sys/fs/ext4/${(disk as { loop: string }).loop}/trigger_fs_error`, '1');
    const before = t.logs.length;
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const response = await t.post('/api/register', {
        email: uniqueEmail(),
        password: STRONG_PASSWORD,
      });
      statuses.push(response.statusCode);
    }
    expect(statuses).toEqual([503, 503, 503, 503, 503]);
    const messages = t.logs.slice(before).map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(messages).not.toContain('request failed');
    // The probe writes at most once a second: the answer before the error may still stand.
    await expect
      .poll(async () => {
        const ready = await t.call('GET', '/readyz');
        return [ready.statusCode, ready.json()];
      })
      .toEqual([503, { status: 'unavailable', checks: { database: 'down' } }]);
    // A read still answers: the file system is read-only, not gone.
    expect((await t.call('GET', '/healthz')).statusCode).toBe(200);
  });
});
