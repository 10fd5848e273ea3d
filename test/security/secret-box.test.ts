import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/security/secret-box.js';

describe('the secret box', () => {
  const box = createSecretBox(randomBytes(32));

  it('opens what it sealed', () => {
    expect(box.open(box.seal('signing key'))).toBe('signing key');
  });

  // AES-GCM under one key must never reuse a nonce: two values sealed with the same one leak
  // their XOR and let a forger compute tags (the signing keys' private halves are sealed here).
  it('seals with a fresh 12-byte nonce every time: the same text never seals alike', () => {
    const sealed = Array.from({ length: 1_000 }, () => box.seal('signing key'));
    const nonces = sealed.map((value) => value.split('.')[1] as string);
    expect(nonces.every((nonce) => Buffer.from(nonce, 'base64url').length === 12)).toBe(true);
    expect(new Set(nonces).size).toBe(sealed.length);
    expect(new Set(sealed).size).toBe(sealed.length);
    expect(sealed.every((value) => box.open(value) === 'signing key')).toBe(true);
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
