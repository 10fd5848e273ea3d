import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort, sleep, waitUntil } from './service-process.js';

/** The newest installed PostgreSQL's bin directory (Debian layout), if any. */
function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((x, y) => Number(y) - Number(x));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

function hasCommand(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export const canRunPrivatePostgres = postgresBinDir() !== undefined;
export const canRunPrivateRedis = hasCommand('redis-server');

/**
 * A throw-away PostgreSQL cluster of our own (initdb + pg_ctl) on a free loopback port, so a test
 * can stop and start it. initdb refuses to run as root: then it runs as the `postgres` OS user.
 */
export class PrivatePostgres {
  private constructor(
    private readonly bin: string,
    private readonly dir: string,
    readonly port: number,
    private readonly runAs: string | undefined,
  ) {}

  static async create(): Promise<PrivatePostgres> {
    const bin = postgresBinDir();
    if (bin === undefined) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql');
    const runAs = userInfo().uid === 0 ? 'postgres' : undefined;
    const dir = mkdtempSync(join(tmpdir(), 'scale-pg-'));
    chmodSync(dir, 0o700);
    if (runAs !== undefined) {
      const ids = execFileSync('id', ['-u', runAs]).toString().trim();
      const gid = execFileSync('id', ['-g', runAs]).toString().trim();
      chownSync(dir, Number(ids), Number(gid));
    }
    const server = new PrivatePostgres(bin, dir, await freePort(), runAs);
    await server.run('initdb', [
      '-D',
      server.dataDir,
      '-U',
      'postgres',
      '--auth=trust',
      '-E',
      'UTF8',
    ]);
    await server.start();
    return server;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private get dataDir(): string {
    return join(this.dir, 'data');
  }

  /** Runs a PostgreSQL tool without blocking the event loop (the test's traffic keeps flowing). */
  private async run(tool: string, args: string[]): Promise<void> {
    const command = join(this.bin, tool);
    const [file, argv] =
      this.runAs === undefined
        ? [command, args]
        : ['runuser', ['-u', this.runAs, '--', command, ...args]];
    await promisify(execFile)(file, argv, { cwd: this.dir });
  }

  async start(): Promise<void> {
    await this.run('pg_ctl', [
      '-D',
      this.dataDir,
      '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      '-l',
      join(this.dir, 'postgres.log'),
      '-w',
      'start',
    ]);
  }

  /** `pg_ctl stop -m fast`: open connections are terminated, new ones refused. */
  async stop(): Promise<void> {
    await this.run('pg_ctl', ['-D', this.dataDir, '-m', 'fast', '-w', 'stop']);
  }

  async destroy(): Promise<void> {
    try {
      await this.run('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // already stopped
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A redis-server child process on a free loopback port, without persistence. */
export class PrivateRedis {
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly dir: string | undefined,
  ) {}

  /**
   * With `dir`, a `SAVE` writes a snapshot there, which the server loads when it starts again (a
   * crash and restart of a Redis that snapshots, as Redis does by default).
   */
  static async create({ dir }: { dir?: string } = {}): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort(), dir);
    await redis.start();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts (or restarts) redis-server on the same port and waits until it answers PING. */
  async start(): Promise<void> {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
        ...(this.dir === undefined ? [] : ['--dir', this.dir]),
      ],
      { stdio: 'ignore' },
    );
    this.child = child;
    await waitUntil('redis-server to answer PING', async () => this.cli('PING') === 'PONG', 10_000);
  }

  /** Freezes the server (SIGSTOP): connections stay open and commands get no answer. */
  freeze(): void {
    this.child?.kill('SIGSTOP');
  }

  /** Lets a frozen server run again (SIGCONT): it answers what was sent meanwhile. */
  thaw(): void {
    this.child?.kill('SIGCONT');
  }

  /** Kills the server outright (SIGKILL) and waits for it to be gone. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    await sleep(50);
  }

  /** Runs one redis-cli command against this server; undefined when it does not answer. */
  cli(...args: string[]): string | undefined {
    try {
      return execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', String(this.port), ...args], {
        stdio: ['ignore', 'pipe', 'ignore'],
        timeout: 2_000,
      })
        .toString()
        .trim();
    } catch {
      return undefined;
    }
  }
}
