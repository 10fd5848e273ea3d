import { isIPv4 } from 'node:net';
import type { createTransport } from 'nodemailer';
import { ConfigError } from '../config.js';
import type { MailMessage } from './messages.js';

/** Where a message goes: an SMTP server, or (development) standard output. */
export interface MailTransport {
  send(message: MailMessage): Promise<void>;
  close(): void;
}

export class PermanentMailError extends Error {
  override name = 'PermanentMailError';
}

/**
 * A 5xx answer to the recipient or to the message itself (an unknown mailbox, content refused) is
 * the server's final word on this message: retrying cannot help. A 5xx anywhere else (a refused
 * login, greeting or sender) says the server or our account is broken for every message, which
 * an operator fixes: those are retried, so nothing is lost meanwhile. So is a 5xx whose enhanced
 * status (RFC 3463) is of class 5.7, security or policy, wherever it comes: a relay that does not
 * let us relay (`554 5.7.1 Relay access denied`: credentials missing or expired, our address not
 * on its list) or send as our sender says so at `RCPT TO` or at the end of `DATA`, for every
 * message alike. A message refused that way for good is given up when its time in the queue runs
 * out (delivery.ts), as an MTA bounces.
 */
function refusesThisMessage(error: unknown): error is { responseCode: number } {
  const { responseCode, command, response } = error as {
    responseCode?: unknown;
    command?: unknown;
    response?: unknown;
  };
  return (
    typeof responseCode === 'number' &&
    responseCode >= 500 &&
    (command === 'RCPT TO' || command === 'DATA') &&
    !(typeof response === 'string' && POLICY_STATUS.test(response))
  );
}

/** A reply whose enhanced status code is 5.7.x (the basic code, then the enhanced one). */
const POLICY_STATUS = /^5\d\d[ -]5\.7\.\d{1,3}\b/;

/**
 * nodemailer's options for `url`. Timeouts belong here (createTransport's second argument holds
 * message defaults); their sum stays under the delivery worker's claim time, so no other instance
 * sends the same message. An `smtp://` URL with credentials for another machine requires STARTTLS:
 * nodemailer otherwise logs in (and sends every code) in clear text to a server that does not
 * offer it, or to whoever stripped the offer on the way. A relay on this machine is exempt.
 */
export function smtpOptions(url: string) {
  const { protocol, username, password, hostname } = new URL(url);
  const credentials = username !== '' || password !== '';
  return {
    url,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 20_000,
    ...(protocol === 'smtp:' && credentials && !isLoopback(hostname) && { requireTLS: true }),
  };
}

/** localhost, 127.0.0.0/8 or ::1 (a URL writes an IPv6 address in brackets). */
function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host === '::1') return true;
  return isIPv4(host) && host.startsWith('127.');
}

/** Nodemailer's transporter; a URL it refuses is a configuration error (its own quotes the URL). */
function createTransporter(create: typeof createTransport, url: string) {
  try {
    return create(smtpOptions(url));
  } catch {
    throw new ConfigError('SMTP_URL is not a URL the SMTP client accepts');
  }
}

/**
 * How long one send may take in all. The timeouts above measure silence: a server that answers a
 * line every few seconds and never finishes held its send, and every other mail of the instance
 * queued behind it, for ever. Aborting closes the connection; the mail is retried with backoff.
 * Under the claim time, as the other timeouts are (delivery.ts).
 */
const SEND_DEADLINE_MS = 50_000;

export async function smtpTransport(
  url: string,
  from: string,
  sendDeadlineMs = SEND_DEADLINE_MS,
): Promise<MailTransport> {
  const { default: nodemailer } = await import('nodemailer');
  const transporter = createTransporter(nodemailer.createTransport, url);
  return {
    async send(message) {
      try {
        await transporter.sendMail({
          signal: AbortSignal.timeout(sendDeadlineMs),
          from,
          // The stored address as one address, never parsed as a header: an account registered
          // under an earlier rule as `owner<other@x>` would get its mail sent to other@x.
          to: { name: '', address: message.to },
          subject: message.subject,
          text: message.text,
        });
      } catch (error) {
        if (refusesThisMessage(error)) throw new PermanentMailError(`SMTP ${error.responseCode}`);
        throw error;
      }
    },
    close: () => transporter.close(),
  };
}

/**
 * Development only: prints whole e-mails, codes included. Start-up warns that it does. On stderr:
 * stdout is the log, JSON lines that a log tool reads one by one.
 */
export function consoleTransport(
  from: string,
  write: (text: string) => void = (t) => process.stderr.write(t),
): MailTransport {
  return {
    async send(message) {
      write(
        `\n----- e-mail (development: SMTP_URL is not set) -----\nFrom: ${from}\nTo: ${message.to}\nSubject: ${message.subject}\n\n${message.text}-----------------------------------------------------\n`,
      );
    },
    close: () => undefined,
  };
}
