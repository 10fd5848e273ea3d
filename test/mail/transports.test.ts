import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smtpOptions, smtpTransport, type MailTransport } from '../../src/mail/transports.js';
import { SmtpSink } from '../helpers/smtp-sink.js';
import { ConfigError } from '../../src/config.js';

/**
 * Addresses stored under an earlier rule (before `"(),:;<>[\]` were refused) still get mail:
 * the transport must hand the SMTP library the address itself, which it would otherwise parse
 * as a header (a display name and another address, or two addresses).
 */
describe('the SMTP transport', () => {
  let sink: SmtpSink;
  let transport: MailTransport;
  beforeAll(async () => {
    sink = await SmtpSink.start();
    transport = await smtpTransport(sink.url, 'service@example.test');
  });
  afterAll(async () => {
    transport?.close();
    await sink?.stop();
  });

  it.each(['owner<other@example.test>', 'owner@example.test,other@example.test'])(
    'never sends mail for %s to an address read out of it',
    async (stored) => {
      await transport.send({ to: stored, subject: 'Password changed', text: 'notice' }).catch(
        () => undefined, // refused by the server as the address it is: fine, nothing went astray
      );
      await transport.send({ to: 'fence@example.test', subject: 'fence', text: 'fence' });
      await sink.waitFor('fence@example.test');
      expect(sink.mails.flatMap((mail) => mail.to)).not.toContain('other@example.test');
      sink.mails.length = 0;
    },
  );
});

describe('SMTP connection options', () => {
  const requiresTls = (url: string) => smtpOptions(url).requireTLS === true;

  it('credentials for another machine over smtp:// require STARTTLS (no login in clear text)', () => {
    expect(requiresTls('smtp://mailer:secret@mail.example.test:587')).toBe(true);
    expect(requiresTls('smtp://mailer@10.0.0.5:25')).toBe(true);
  });

  it('not for smtps:// (TLS from the start), without credentials, or for a relay on this machine', () => {
    expect(requiresTls('smtps://mailer:secret@mail.example.test:465')).toBe(false);
    expect(requiresTls('smtp://mail.example.test:25')).toBe(false);
    for (const host of ['localhost', '127.0.0.1', '127.0.1.1', '[::1]'])
      expect(requiresTls(`smtp://mailer:secret@${host}:2525`), host).toBe(false);
  });
});

describe('an SMTP server that answers and never finishes', () => {
  let server: Server;
  let url: string;
  const sockets = new Set<Socket>();
  beforeAll(async () => {
    // Greets, then answers EHLO with one more continuation line every 100 ms, for ever: no
    // silence for the socket timeout to notice.
    server = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.write('220 trickle.example.test ESMTP\r\n');
      socket.once('data', () => {
        const timer = setInterval(() => socket.write('250-still thinking\r\n'), 100);
        socket.on('close', () => clearInterval(timer));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `smtp://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it('gives up the send at its deadline and closes the connection, so the mail is retried', async () => {
    const transport = await smtpTransport(url, 'service@example.test', 500);
    try {
      const started = Date.now();
      const sent = transport.send({ to: 'a@example.test', subject: 'Code', text: '123456' });
      await expect(sent).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(5_000);
      await expect.poll(() => [...sockets].every((socket) => socket.destroyed)).toBe(true);
    } finally {
      transport.close();
    }
  }, 15_000);
});

describe('an SMTP_URL the SMTP client refuses', () => {
  // The configuration refuses such a host first (test/config.test.ts); should another slip by,
  // the start stops with a configuration error, not nodemailer's, which quotes the URL whole.
  it('is a configuration error that does not quote the URL', async () => {
    const refused = await smtpTransport(
      'smtp://mailer:Sup3rSecretSmtpPw@mail%20relay.example.test:587',
      'service@example.test',
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ConfigError);
    expect(String((refused as Error).message)).toMatch(/^SMTP_URL /);
    expect(JSON.stringify(refused)).not.toContain('Sup3rSecretSmtpPw');
  });
});
