import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smtpTransport, type MailTransport } from '../../src/mail/transports.js';
import { SmtpSink } from '../helpers/smtp-sink.js';

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
