import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';

/** Settings that are valid but risky, said once at start-up. */
export function warnAboutSettings(config: Config, log: FastifyBaseLogger): void {
  if (!config.smtpUrl) {
    log.warn(
      'SMTP_URL is not set: e-mails, codes included, are printed on stderr. For development only.',
    );
  }
  if (config.trustProxy === true) {
    log.warn(
      "TRUST_PROXY=true: the client IP (for logs and per-IP limits) is the left-most X-Forwarded-For entry, which the client controls unless your proxy overwrites that header. Prefer the list of your proxies' addresses (TRUST_PROXY=10.0.0.5,10.0.1.0/24): then the client IP is the right-most address that is not one of them.",
    );
  }
}
