import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { backends, type ProvisionedBackend } from '../helpers/backends.js';
import { SmtpSink } from '../helpers/smtp-sink.js';
import { randomIp, STRONG_PASSWORD, uniqueEmail } from '../helpers/test-app.js';
import { newAppSecret, ServiceProcess, type Reply } from './service-process.js';

const USERS = 10;
const NEWCOMERS = 10;
/** Responses to wait for before the SIGKILL: the rest of the burst is still in flight. */
const KILL_AFTER_RESPONSES = 4;

interface Member {
  readonly email: string;
  readonly oldPassword: string;
  readonly newPassword: string;
  readonly userId: string;
  /** The session the change is made from: it must survive the change. */
  readonly current: { access: string; refresh: string };
  /** A second session: revoked if and only if the password changed. */
  readonly other: { refresh: string };
}

type Outcome = number | 'lost';

const newPassword = () => `crash-${randomBytes(6).toString('hex')}-Kiwi`;

describe.each(backends)('SIGKILL in the middle of a burst ($name)', (backend) => {
  let provisioned: ProvisionedBackend;
  let smtp: SmtpSink;
  let env: Record<string, string>;
  let service: ServiceProcess;
  let db: Db;

  beforeAll(async () => {
    provisioned = await backend.provision();
    smtp = await SmtpSink.start();
    env = { APP_SECRET: newAppSecret(), ...provisioned.env, SMTP_URL: smtp.url };
    service = await ServiceProcess.start(env);
    db = await openDatabase(loadConfig(env).database);
  });

  afterAll(async () => {
    await service?.kill();
    await db?.destroy();
    await smtp?.stop();
    await provisioned?.drop();
  });

  async function enrol(): Promise<Member> {
    const email = uniqueEmail('crash');
    const registered = await service.post(
      '/api/register',
      { email, password: STRONG_PASSWORD },
      { ip: randomIp() },
    );
    expect(registered.status).toBe(201);
    const second = await service.post(
      '/api/login',
      { email, password: STRONG_PASSWORD },
      { ip: randomIp() },
    );
    expect(second.status).toBe(200);
    return {
      email,
      oldPassword: STRONG_PASSWORD,
      newPassword: newPassword(),
      userId: (registered.body.user as { id: string }).id,
      current: {
        access: String(registered.body.access_token),
        refresh: String(registered.body.refresh_token),
      },
      other: { refresh: String(second.body.refresh_token) },
    };
  }

  async function passwordHash(userId: string): Promise<string | undefined> {
    const row = await db
      .selectFrom('users')
      .select('password_hash')
      .where('id', '=', userId)
      .executeTakeFirst();
    return row?.password_hash;
  }

  /** Fires every request at once; SIGKILLs the service once a few have answered. */
  async function burst(
    members: readonly Member[],
    newcomers: readonly string[],
  ): Promise<{ changes: Outcome[]; registrations: Outcome[] }> {
    let answered = 0;
    let killing: Promise<void> | undefined;
    const track = async (request: Promise<Reply>): Promise<Outcome> => {
      try {
        const { status } = await request;
        answered += 1;
        if (answered === KILL_AFTER_RESPONSES) killing = service.kill('SIGKILL');
        return status;
      } catch {
        return 'lost';
      }
    };
    const changes: Promise<Outcome>[] = [];
    const registrations: Promise<Outcome>[] = [];
    // Interleaved, so both kinds are among the first answers and among the lost ones.
    for (let i = 0; i < Math.max(members.length, newcomers.length); i++) {
      const member = members[i];
      if (member !== undefined) {
        changes.push(
          track(
            service.post(
              '/api/change-password',
              { password: member.oldPassword, new_password: member.newPassword },
              { token: member.current.access, ip: randomIp(), timeoutMs: 20_000 },
            ),
          ),
        );
      }
      const email = newcomers[i];
      if (email !== undefined) {
        registrations.push(
          track(
            service.post(
              '/api/register',
              { email, password: STRONG_PASSWORD },
              { ip: randomIp(), timeoutMs: 20_000 },
            ),
          ),
        );
      }
    }
    const outcomes = {
      changes: await Promise.all(changes),
      registrations: await Promise.all(registrations),
    };
    await (killing ?? service.kill('SIGKILL'));
    return outcomes;
  }

  const login = (email: string, password: string) =>
    service.post('/api/login', { email, password }, { ip: randomIp() });
  const refresh = (token: string) =>
    service.post('/api/refresh-token', { refresh_token: token }, { ip: randomIp() });

  it('every 2xx survives the crash, and a password change is applied whole or not at all', async () => {
    const members = await Promise.all(Array.from({ length: USERS }, () => enrol()));
    const hashesBefore = await Promise.all(members.map((m) => passwordHash(m.userId)));
    const newcomers = Array.from({ length: NEWCOMERS }, () => uniqueEmail('newcomer'));

    const { changes, registrations } = await burst(members, newcomers);
    const all = [...changes, ...registrations];
    expect(all.filter((o) => o === 'lost').length, 'the kill came after the burst').toBeGreaterThan(
      0,
    );
    // Whatever answered before the kill answered a success.
    expect(all.filter((o) => o !== 'lost' && (o < 200 || o >= 300))).toEqual([]);

    service = await ServiceProcess.start(env);

    // Registrations: every 201 can log in; a lost one is all there or not there at all.
    const newcomerLogins = await Promise.all(newcomers.map((e) => login(e, STRONG_PASSWORD)));
    for (const [i, email] of newcomers.entries()) {
      const status = newcomerLogins[i]?.status;
      if (registrations[i] === 201 && status !== 200) {
        // Say what is in the database, so a failure here can be told apart from a login problem.
        const row = await db
          .selectFrom('users')
          .select(['id', 'created_at'])
          .where('email_normalized', '=', email.toLowerCase())
          .executeTakeFirst();
        const body = JSON.stringify(newcomerLogins[i]?.body);
        expect.fail(
          `${email}: registered (201), login ${status} ${body}; user row: ${JSON.stringify(row)}`,
        );
      } else expect([200, 401], email).toContain(status);
    }

    for (const [i, member] of members.entries()) {
      const changed = (await passwordHash(member.userId)) !== hashesBefore[i];
      if (changes[i] === 200) expect(changed, member.email).toBe(true);

      // The password that works is the new one exactly when the hash changed.
      const [withNew, withOld] = changed
        ? [await login(member.email, member.newPassword), undefined]
        : [undefined, await login(member.email, member.oldPassword)];
      expect((withNew ?? withOld)?.status, member.email).toBe(200);

      // "every other session of the user is revoked" — together with the change, never apart.
      expect((await refresh(member.other.refresh)).status, member.email).toBe(changed ? 401 : 200);
      expect((await refresh(member.current.refresh)).status, member.email).toBe(200);

      // The notification was committed with the change: sent already, or still in the outbox.
      if (changed) {
        const queued = await db
          .selectFrom('mail_outbox')
          .select('id')
          .where('recipient', '=', member.email)
          .where('subject', '=', 'Your password was changed')
          .execute();
        const sent = smtp
          .mailsTo(member.email)
          .filter((m) => m.subject === 'Your password was changed');
        expect(queued.length + sent.length, member.email).toBeGreaterThan(0);
      }
    }
  }, 120_000); // two service starts and ~70 hashes, under the other files' load
});
