import { Errors } from '../errors.js';
import { Type } from '@sinclair/typebox';
import { NAME_MAX } from '../accounts/public-user.js';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH_DEFAULT } from '../security/password-policy.js';
import { MessageBody, nullable, withErrors } from '../http/schemas.js';

/**
 * Request and response schemas of the Auth group: they validate requests (no type coercion) and
 * are the OpenAPI document. Rules that need more than a schema (e-mail format after trimming,
 * the password policy) live in the services and answer with the same error shape.
 */

// No outer bound on these but the body's size (16 KiB): the services give API.md's answer for any
// length. An address is trimmed before its 254-character rule; a new password over 128 code points
// is weak_password; a current or login password of any length is just wrong (incorrect_password,
// invalid_credentials); a code of any length is invalid_code.
const Email = Type.String({
  description: 'E-mail address; trimmed, compared case-insensitively.',
});
/** A password being chosen: the policy applies. */
const NewPassword = Type.String({
  description: `Any Unicode text; policy: ${PASSWORD_MIN_LENGTH_DEFAULT}–${PASSWORD_MAX_LENGTH} code points after NFC (the deployment may raise the minimum: PASSWORD_MIN_LENGTH), not a common password, not the e-mail address or its local part.`,
});
/** A password being proved: any text; a wrong one is just wrong. */
export const CurrentPassword = Type.String({ description: "The account's current password." });
const Code = Type.String({ description: 'The 6-digit code from the e-mail.' });
// No outer bound but the body's size: the exact rule applies after trimming and NFC, so any
// amount of surrounding white space is allowed (as for an influencer's display name).
export const Name = Type.String({
  description: `1–${NAME_MAX} characters after trimming and NFC, with at least one visible one; no control characters or bidirectional overrides (U+202A–202E, U+2066–2069).`,
});

export const User = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    email: Type.String(),
    email_confirmed: Type.Boolean(),
    name: nullable(Type.String()),
    bio: nullable(Type.String()),
    avatar_url: nullable(Type.String()),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'User', title: 'User' },
);

const tokenFields = {
  access_token: Type.String({ description: 'JWT (typ at+jwt), valid 15 minutes.' }),
  refresh_token: Type.String({ description: 'Opaque; rotated on every use; valid up to 30 days.' }),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Literal(900),
};

const signedIn = (message: string) =>
  Type.Object({ message: Type.Literal(message), user: Type.Ref(User), ...tokenFields });

const tags = ['Auth'];

export const registerSchema = {
  tags,
  operationId: 'register',
  summary: 'Create an account; a confirmation code is e-mailed',
  body: Type.Object({ email: Email, password: NewPassword, name: Type.Optional(Name) }),
  response: withErrors(
    { 201: signedIn('User registered') },
    Errors.emailTaken,
    Errors.validationFailed,
    Errors.weakPassword,
  ),
};

export const loginSchema = {
  tags,
  operationId: 'login',
  summary: 'Sign in with e-mail and password',
  body: Type.Object({ email: Email, password: CurrentPassword }),
  response: withErrors(
    { 200: signedIn('Login successful') },
    Errors.invalidCredentials,
    Errors.tooManyAttempts,
  ),
};

export const refreshSchema = {
  tags,
  operationId: 'refreshToken',
  summary: 'Exchange a refresh token for new tokens (rotation)',
  // No outer bound but the body's size: any string that is not a live token is 401 (API.md).
  body: Type.Object({ refresh_token: Type.String() }),
  response: withErrors(
    {
      200: Type.Object({ message: Type.Literal('Token refreshed'), ...tokenFields }),
    },
    Errors.invalidRefreshToken,
  ),
};

export const logoutSchema = {
  tags,
  operationId: 'logout',
  summary: 'End this session, or every session with `all: true`',
  body: Type.Object({ all: Type.Optional(Type.Boolean()) }),
  response: withErrors({ 200: MessageBody('Logged out') }),
};

export const sendConfirmationCodeSchema = {
  tags,
  operationId: 'sendConfirmationCode',
  summary: 'E-mail a new confirmation code (same answer for every address)',
  body: Type.Object({ email: Email }),
  response: withErrors(
    { 200: MessageBody('Confirmation code sent') },
    Errors.emailMismatch,
    Errors.tooManyRequests,
  ),
};

export const confirmEmailSchema = {
  tags,
  operationId: 'confirmEmail',
  summary: 'Confirm an e-mail address with its code',
  body: Type.Object({ email: Email, code: Code }),
  response: withErrors(
    { 200: MessageBody('Email confirmed') },
    Errors.invalidCode,
    Errors.emailMismatch,
  ),
};

export const changePasswordSchema = {
  tags,
  operationId: 'changePassword',
  summary: "Change the caller's password; signs out every other session",
  body: Type.Object({ password: CurrentPassword, new_password: NewPassword }),
  response: withErrors(
    {
      200: MessageBody('User changed password successful'),
    },
    Errors.incorrectPassword,
    Errors.weakPassword,
    Errors.samePassword,
    Errors.tooManyAttempts,
    Errors.rateLimited,
  ),
};

export const forgotPasswordSchema = {
  tags,
  operationId: 'forgotPassword',
  summary: 'E-mail a password reset code (same answer for every address)',
  body: Type.Object({ email: Email }),
  response: withErrors(
    {
      200: MessageBody('If the address is registered, a reset code has been sent'),
    },
    Errors.tooManyRequests,
  ),
};

export const resetPasswordSchema = {
  tags,
  operationId: 'resetPassword',
  summary: 'Set a new password with a reset code; signs out every session',
  body: Type.Object({ email: Email, code: Code, new_password: NewPassword }),
  response: withErrors(
    { 200: MessageBody('Password reset successful') },
    Errors.invalidCode,
    Errors.weakPassword,
  ),
};

const Session = Type.Object({
  id: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.String({ format: 'date-time' }),
  user_agent: nullable(Type.String()),
  ip: nullable(Type.String()),
  current: Type.Boolean(),
});

export const listSessionsSchema = {
  tags,
  operationId: 'listSessions',
  summary: "The caller's live sessions",
  response: withErrors({ 200: Type.Object({ sessions: Type.Array(Session) }) }),
};

export const revokeSessionSchema = {
  tags,
  operationId: 'revokeSession',
  summary: 'Revoke one of the caller’s sessions',
  params: Type.Object({ id: Type.String({ description: 'The session id.' }) }),
  response: withErrors({ 200: MessageBody('Session revoked') }, Errors.notFound),
};
