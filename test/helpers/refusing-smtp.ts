import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

/** An SMTP reply a test's server gives instead of accepting: its text and code. */
export interface SmtpRefusal {
  readonly message: string;
  readonly responseCode: number;
}

export interface RefusingSmtp {
  readonly url: string;
  /** Every recipient the server was asked for (RCPT TO), refused or not. */
  readonly recipients: string[];
  /** The recipients of every message it accepted. */
  readonly delivered: string[];
  close(): Promise<void>;
}

/**
 * A real SMTP server on a loopback port that refuses at RCPT TO whichever recipient `refusal`
 * answers for, and accepts the others; `options` adds to it (e.g. `onAuth`).
 */
export async function startRefusingSmtp(
  refusal: (address: string) => SmtpRefusal | undefined,
  options: SMTPServerOptions = {},
): Promise<RefusingSmtp> {
  const recipients: string[] = [];
  const delivered: string[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo({ address }, _session, callback) {
      recipients.push(address);
      const refused = refusal(address);
      if (refused === undefined) return callback();
      callback(Object.assign(new Error(refused.message), { responseCode: refused.responseCode }));
    },
    onData(stream, session, callback) {
      stream.resume();
      stream.on('end', () => {
        delivered.push(...session.envelope.rcptTo.map((r) => r.address));
        callback();
      });
    },
    ...options,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as { port: number };
  return {
    url: `smtp://127.0.0.1:${port}`,
    recipients,
    delivered,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
