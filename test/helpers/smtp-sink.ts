import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  readonly to: string[];
  readonly raw: string;
  /** The first 6-digit code in the message, if any. */
  readonly code: string | undefined;
  readonly subject: string;
}

/** A real SMTP server on a loopback port that keeps what it receives; can be stopped and restarted. */
export class SmtpSink {
  readonly mails: ReceivedMail[] = [];
  private server: SMTPServer | undefined;
  private waiters: Array<() => void> = [];
  port = 0;

  static async start(): Promise<SmtpSink> {
    const sink = new SmtpSink();
    await sink.listen(0);
    return sink;
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  async listen(port = this.port): Promise<void> {
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          this.mails.push({
            to: session.envelope.rcptTo.map((r) => r.address),
            raw,
            code: /\b(\d{6})\b/.exec(
              raw
                .split(/\r?\n\r?\n/)
                .slice(1)
                .join('\n'),
            )?.[1],
            subject: /^Subject: (.*)$/m.exec(raw)?.[1]?.trim() ?? '',
          });
          this.waiters.splice(0).forEach((wake) => wake());
          callback();
        });
      },
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  mailsTo(address: string): ReceivedMail[] {
    return this.mails.filter((m) => m.to.some((to) => to.toLowerCase() === address.toLowerCase()));
  }

  /** Waits until `address` has received `count` mails, and returns the last one. */
  async waitFor(address: string, count = 1, timeoutMs = 10_000): Promise<ReceivedMail> {
    const deadline = Date.now() + timeoutMs;
    while (this.mailsTo(address).length < count) {
      if (Date.now() > deadline)
        throw new Error(`no mail #${count} for ${address} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    return this.mailsTo(address)[count - 1] as ReceivedMail;
  }
}
