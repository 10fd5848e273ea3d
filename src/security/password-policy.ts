import { readFileSync } from 'node:fs';
import type { FieldProblem } from '../errors.js';
import { normalizeEmail } from '../accounts/public-user.js';

/** A password's length in code points after NFC: the minimum by default (PASSWORD_MIN_LENGTH may raise it), and the maximum. */
export const PASSWORD_MIN_LENGTH_DEFAULT = 8;
export const PASSWORD_MAX_LENGTH = 128;

/**
 * The shipped blocklist, loaded once. The file is already NFC, lower-cased and sorted
 * (scripts/build-password-list.mjs), so it is kept as ONE string searched by bisection: about
 * 1 MiB, where a Set of its ~100,000 entries would hold several times that on the heap.
 */
export class SortedWordList {
  /** Offsets of each entry's first character; entry i ends one before offsets[i + 1]. */
  private readonly offsets: Uint32Array;

  /** `text`: the entries, each followed by a newline. */
  constructor(private readonly text: string) {
    const starts = [0];
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', end + 1))
      starts.push(end + 1);
    this.offsets = Uint32Array.from(starts);
  }

  get size(): number {
    return this.offsets.length - 1;
  }

  entry(index: number): string {
    return this.text.slice(this.offsets[index], (this.offsets[index + 1] as number) - 1);
  }

  has(word: string): boolean {
    let low = 0;
    let high = this.size - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const candidate = this.entry(middle);
      if (candidate === word) return true;
      if (candidate < word) low = middle + 1;
      else high = middle - 1;
    }
    return false;
  }
}

let commonPasswords: SortedWordList | undefined;

export function loadCommonPasswords(): SortedWordList {
  if (commonPasswords !== undefined) return commonPasswords;
  const text = readFileSync(new URL('./common-passwords.txt', import.meta.url), 'utf8');
  commonPasswords = new SortedWordList(text.slice(text.indexOf('\n') + 1));
  return commonPasswords;
}

/** Passwords are compared and hashed in NFC, so the same text typed on two keyboards matches. */
export function normalizePassword(password: string): string {
  return password.normalize('NFC');
}

export interface PasswordPolicy {
  /** Every rule `password` breaks, as `details` of a weak_password error; empty when it passes. */
  problems(password: string, email: string, field: string): FieldProblem[];
}

/** NIST SP 800-63B-4: length and a blocklist, no composition rules, no truncation. */
export function createPasswordPolicy(minLength: number): PasswordPolicy {
  const blocklist = loadCommonPasswords();
  return {
    problems(password, email, field) {
      const normalized = normalizePassword(password);
      const length = [...normalized].length;
      const problems: FieldProblem[] = [];
      if (!password.isWellFormed()) problems.push({ field, message: 'must be valid Unicode text' });
      if (length < minLength)
        problems.push({ field, message: `must be at least ${minLength} characters long` });
      if (length > PASSWORD_MAX_LENGTH) {
        problems.push({ field, message: `must be at most ${PASSWORD_MAX_LENGTH} characters long` });
      }
      const folded = normalized.toLowerCase();
      if (blocklist.has(folded))
        problems.push({ field, message: 'is too common; choose a less predictable password' });
      const address = normalizeEmail(email);
      const localPart = address.slice(0, address.lastIndexOf('@'));
      if (folded === address || (localPart !== '' && folded === localPart)) {
        problems.push({ field, message: 'must not be your e-mail address or a part of it' });
      }
      return problems;
    },
  };
}
