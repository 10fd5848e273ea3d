import { Errors } from '../errors.js';
import { Type } from '@sinclair/typebox';
import { CurrentPassword, Name, User } from '../auth/schemas.js';
import { HttpsUrl } from '../http/https-url.js';
import { Bio, MessageBody, nullable, withErrors } from '../http/schemas.js';

const tags = ['Profile'];

export const getProfileSchema = {
  tags,
  operationId: 'getProfile',
  summary: "The caller's account",
  response: withErrors({ 200: Type.Object({ user: Type.Ref(User) }) }),
};

export const updateProfileSchema = {
  tags,
  operationId: 'updateProfile',
  summary: 'Set (or, with null, clear) name, bio and avatar_url',
  body: Type.Object({
    name: Type.Optional(nullable(Name)),
    bio: Type.Optional(nullable(Bio)),
    avatar_url: Type.Optional(nullable(HttpsUrl)),
  }),
  response: withErrors(
    {
      200: Type.Object({ message: Type.Literal('Profile updated'), user: Type.Ref(User) }),
    },
    Errors.validationFailed,
  ),
};

export const deleteProfileSchema = {
  tags,
  operationId: 'deleteAccount',
  summary: 'Delete the account, its sessions and codes',
  // No outer bound but the body's size: an overlong password is just wrong (incorrect_password).
  body: Type.Object({ password: CurrentPassword }),
  response: withErrors(
    { 200: MessageBody('Account deleted') },
    Errors.incorrectPassword,
    Errors.tooManyAttempts,
    Errors.rateLimited,
  ),
};
