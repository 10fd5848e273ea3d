import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { STRONG_PASSWORD, uniqueEmail } from './helpers/test-app.js';

// The real process, `src/main.cts` run through tsx as `npm run dev` does, with the default
// configuration (SQLite under ./data, no SMTP_URL) in a fresh working directory.

const SERVER_ENTRY = fileURLToPath(new URL('../src/main.cts', import.meta.url));
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const START = { timeout: 20_000, interval: 50 };

interface LogLine {
  level: number;
  msg: string;
  url?: string;
}

/** A running `src/main.cts` with its output captured. */
class ServerProcess {
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;

  private constructor(readonly child: ChildProcess) {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (this.stdout += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /** Only the variables given: no DATABASE_URL, SMTP_URL, APP_SECRET from the test environment. */
  static spawn(cwd: string, env: Record<string, string>): ServerProcess {
    const child = spawn(process.execPath, ['--import', TSX_LOADER, SERVER_ENTRY], {
      cwd,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new ServerProcess(child);
  }

  /** The JSON log lines printed so far. */
  logs(): LogLine[] {
    return this.stdout
      .split('\n')
      .slice(0, -1) // the last piece may be a line still being written
      .map((line) => JSON.parse(line) as LogLine);
  }

  waitForLog(matches: (line: LogLine) => boolean): Promise<LogLine> {
    return vi.waitFor(() => {
      const found = this.logs().find(matches);
      expect(found, `log line not printed yet; stderr: ${this.stderr}`).toBeDefined();
      return found!;
    }, START);
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the server process (SQLite, default configuration)', () => {
  let cwd: string;
  let port: number;
  let server: ServerProcess;
  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'account-service-process-'));
    port = await freePort();
    server = ServerProcess.spawn(cwd, { PORT: String(port), LOG_LEVEL: 'debug' });
    await server.waitForLog((line) => line.msg.startsWith('Server listening at'));
  });
  afterAll(() => {
    server.kill();
    rmSync(cwd, { recursive: true, force: true });
  });

  it('creates data/auth.db and data/app-secret (owner-only, 0600) in its working directory', () => {
    expect(existsSync(join(cwd, 'data', 'auth.db'))).toBe(true);
    expect(statSync(join(cwd, 'data', 'app-secret')).mode & 0o777).toBe(0o600);
  });

  it('listens on 127.0.0.1:PORT and answers GET /healthz', async () => {
    const listening = server.logs().find((line) => line.msg.startsWith('Server listening at'));
    expect(listening?.msg).toBe(`Server listening at http://127.0.0.1:${port}`);
    const response = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('warns at start-up that e-mails are printed, since SMTP_URL is not set', () => {
    const warnings = server.logs().filter((line) => line.level === 40);
    expect(warnings.some((w) => /SMTP_URL/.test(w.msg) && /development/i.test(w.msg))).toBe(true);
  });

  it('prints a development e-mail on stderr, so that stdout stays JSON lines', async () => {
    const email = uniqueEmail();
    const response = await fetch(`http://127.0.0.1:${port}/api/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: STRONG_PASSWORD }),
    });
    expect(response.status).toBe(201);
    await vi.waitFor(
      () => expect(server.stderr).toMatch(/Your confirmation code is \d{6}\./),
      START,
    );
    expect(server.stderr).toContain(`To: ${email}`);
    const lines = server.stdout.split('\n').filter(Boolean);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
  });

  it('on SIGTERM drains the in-flight request (201, keep-alive client) and exits with code 0', async () => {
    const isRegister = (line: LogLine) =>
      line.msg === 'request received' && line.url === '/api/register';
    const earlier = server.logs().filter(isRegister).length; // an earlier test's
    const response = fetch(`http://127.0.0.1:${port}/api/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: uniqueEmail(), password: STRONG_PASSWORD }),
    });
    // Signal once the server has the request (it is hashing the password), not before: a request
    // that arrives after shutdown began is refused, as it should be.
    await vi.waitFor(
      () => expect(server.logs().filter(isRegister).length).toBeGreaterThan(earlier),
      START,
    );
    server.child.kill('SIGTERM');

    expect((await response).status).toBe(201);
    expect(await server.exited).toBe(0);
  });
});

describe('the server process shutting down with work that does not end', () => {
  let cwd: string;
  let port: number;
  let server: ServerProcess | undefined;
  const slowSmtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    // Takes the message, then answers only after the client's 20 s socket timeout.
    onData(stream, _session, callback) {
      mailsArriving += 1;
      stream.resume();
      stream.on('end', () => setTimeout(() => callback(), 25_000).unref());
    },
  });
  let mailsArriving = 0;
  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'account-service-process-'));
    port = await freePort();
    await new Promise<void>((resolve) => slowSmtp.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    server?.kill();
    await new Promise<void>((resolve) => slowSmtp.close(() => resolve()));
    rmSync(cwd, { recursive: true, force: true });
  });

  async function start(env: Record<string, string> = {}) {
    server = ServerProcess.spawn(cwd, { PORT: String(port), LOG_LEVEL: 'debug', ...env });
    await server.waitForLog((line) => line.msg.startsWith('Server listening at'));
    return server;
  }

  it('cuts a client stalled mid-request after the drain time, cleans up and exits with code 0', async () => {
    const running = await start();
    const client = connect(port, '127.0.0.1');
    client.on('error', () => undefined);
    // Headers and half the body, then nothing.
    client.write(
      'POST /api/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
        'Content-Length: 100\r\n\r\n{"email":"',
    );
    await running.waitForLog(
      (line) => line.msg === 'request received' && line.url === '/api/login',
    );
    const signalled = performance.now();
    running.child.kill('SIGTERM');
    expect(await running.exited).toBe(0);
    // After the 7 s drain (an open request is waited for that long, not cut at once), before 10 s.
    const took = performance.now() - signalled;
    expect(took).toBeGreaterThanOrEqual(6_900);
    expect(took).toBeLessThan(10_000);
    expect(running.logs().some((line) => /closing their connections/.test(line.msg))).toBe(true);
    client.destroy();
  }, 45_000); // the start (up to 20 s under load), then the 7 s drain

  it('does not wait out a slow SMTP server: exits with code 0 while a send is under way', async () => {
    const { port: smtpPort } = slowSmtp.server.address() as { port: number };
    const running = await start({ SMTP_URL: `smtp://127.0.0.1:${smtpPort}` });
    const registered = await fetch(`http://127.0.0.1:${port}/api/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: uniqueEmail(), password: STRONG_PASSWORD }),
    });
    expect(registered.status).toBe(201);
    await vi.waitFor(() => expect(mailsArriving).toBe(1), START);
    const signalled = performance.now();
    running.child.kill('SIGTERM');
    expect(await running.exited).toBe(0);
    expect(performance.now() - signalled).toBeLessThan(9_000);
  }, 30_000);
});

describe('the server process with a bad configuration value', () => {
  let cwd: string;
  beforeAll(() => {
    cwd = mkdtempSync(join(tmpdir(), 'account-service-process-'));
  });
  afterAll(() => rmSync(cwd, { recursive: true, force: true }));

  it('exits with code 1 and one stderr line starting with "configuration error:"', async () => {
    const server = ServerProcess.spawn(cwd, { PORT: 'abc' });
    try {
      expect(await server.exited).toBe(1);
      const lines = server.stderr.split('\n').filter((line) => line !== '');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^configuration error: .*PORT/);
    } finally {
      server.kill();
    }
  }, 20_000);

  /** The one line a start that `env` stops writes (and that it exits 1). */
  async function failedStart(env: Record<string, string>): Promise<string[]> {
    const server = ServerProcess.spawn(cwd, { PORT: '0', PUBLIC_URL: 'http://127.0.0.1', ...env });
    try {
      expect(await server.exited).toBe(1);
      return server.stderr.split('\n').filter((line) => line !== '');
    } finally {
      server.kill();
    }
  }

  it('a database it cannot open: one line saying so, without the password, not a stack', async () => {
    const secret = 'x'.repeat(40);
    expect(await failedStart({ DATABASE_URL: `sqlite:${cwd}` })).toEqual([
      expect.stringMatching(/^cannot open the database: /),
    ]);
    const refused = await failedStart({
      DATABASE_URL: 'postgres://app:db-password@127.0.0.1:1/app',
      APP_SECRET: secret,
    });
    expect(refused).toEqual([expect.stringMatching(/^cannot open the database: .*ECONNREFUSED/)]);
    expect(refused.join('')).not.toContain('db-password');
  }, 30_000);

  it('an error nothing catches ends it (code 1) with a report that quotes no URL credentials', async () => {
    // A preload throws, once the service handles uncaught errors (or after 5 s), an error quoting
    // a URL with its password, as Node's ERR_INVALID_URL does (`input`); Node's report prints it.
    const preload = join(cwd, 'throws-later.mjs');
    writeFileSync(
      preload,
      `let ticks = 0;
      const wait = setInterval(() => {
        if (process.listenerCount('uncaughtException') === 0 && ++ticks < 500) return;
        clearInterval(wait);
        throw Object.assign(new TypeError('Invalid URL'), {
          code: 'ERR_INVALID_URL',
          input: 'smtp://mailer:Sup3rSecretSmtpPw@mail%20relay:587',
        });
      }, 10);`,
    );
    const lines = await failedStart({ NODE_OPTIONS: `--import ${preload}` });
    const report = lines.join('\n');
    expect(report).toMatch(/^fatal: TypeError: Invalid URL\n\s+at /);
    expect(report).toContain('"input":"smtp://[redacted]@mail%20relay:587"');
    expect(report).not.toContain('Sup3rSecretSmtpPw');
  }, 30_000);

  it('keys sealed under another APP_SECRET: one configuration error line', async () => {
    const data = mkdtempSync(join(cwd, 'sealed-'));
    const url = `sqlite:${join(data, 'app.db')}`;
    const first = ServerProcess.spawn(cwd, {
      PORT: '0',
      PUBLIC_URL: 'http://127.0.0.1',
      DATABASE_URL: url,
      APP_SECRET: 'a'.repeat(40),
    });
    await first.waitForLog((line) => line.msg.startsWith('Server listening at'));
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const lines = await failedStart({ DATABASE_URL: url, APP_SECRET: 'b'.repeat(40) });
    expect(lines).toEqual([
      expect.stringMatching(/^configuration error: signing key .* cannot be unsealed/),
    ]);
  }, 30_000);
});

describe('the server process on a port another process holds', () => {
  let cwd: string;
  const holder = createServer();
  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'account-service-process-'));
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => {
    holder.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  it('exits with code 1 and one stderr line naming the address and the reason', async () => {
    const { port } = holder.address() as { port: number };
    const server = ServerProcess.spawn(cwd, { PORT: String(port), HOST: '127.0.0.1' });
    try {
      expect(await server.exited).toBe(1);
      const lines = server.stderr.split('\n').filter((line) => line !== '');
      expect(lines).toEqual([`cannot listen on 127.0.0.1:${port}: address already in use`]);
    } finally {
      server.kill();
    }
  }, 20_000);
});
