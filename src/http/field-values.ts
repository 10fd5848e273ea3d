import { Errors } from '../errors.js';

/**
 * What every text field a client sends must be, whichever group reads it, and the one way to
 * refuse a field's value: `400 validation_failed` naming the field.
 */

export function refuseField(field: string, message: string): never {
  throw Errors.validationFailed([{ field, message }]);
}

/**
 * Refuses half of a surrogate pair on its own: JSON can carry it, UTF-8 cannot store it (it
 * would be stored and hashed as U+FFFD, another text than the one answered).
 */
export function requireWellFormed(raw: string, field: string): void {
  if (!raw.isWellFormed()) refuseField(field, 'must be valid Unicode text');
}
