import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/security/secret-box.js';

describe('the secret box', () => {
  const box = createSecretBox(randomBytes(32));

  it('opens what it sealed', () => {
    expect(box.open(box.seal('signing key'))).toBe('signing key');
  });

  it('refuses a sealed value whose tag was cut short, or changed', () => {
    const [version, iv, tag, body] = box.seal('signing key').split('.') as [
      string,
      string,
      string,
      string,
    ];
    const bytes = Buffer.from(tag, 'base64url');
    const cut = [version, iv, bytes.subarray(0, 4).toString('base64url'), body].join('.');
    expect(() => box.open(cut)).toThrow();
    bytes[0] = (bytes[0] as number) ^ 1;
    expect(() => box.open([version, iv, bytes.toString('base64url'), body].join('.'))).toThrow();
  });
});
