import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { ServiceContext } from '../context.js';
import { callerOf } from '../http/authenticate.js';
import { confirmEmail, sendConfirmationCode } from './email-confirmation.js';
import { login } from './login.js';
import { changePassword, forgotPassword, resetPassword } from './passwords.js';
import { register } from './registration.js';
import * as schemas from './schemas.js';
import {
  listSessions,
  logout,
  refreshSession,
  revokeSession,
  type ClientInfo,
} from './sessions.js';
import { clientIp } from '../http/client-ip.js';

interface Options {
  readonly ctx: ServiceContext;
}

const PUBLIC = { access: 'public' } as const;
const OPTIONAL = { access: 'optional' } as const;
const BEARER = { access: 'bearer' } as const;

function clientOf(request: FastifyRequest): ClientInfo {
  return { userAgent: request.headers['user-agent'], ip: clientIp(request) };
}

/** The Auth group: HTTP shape only; every rule is in the services. */
export const authRoutes: FastifyPluginAsyncTypebox<Options> = async (app, { ctx }) => {
  app.post(
    '/api/register',
    { config: PUBLIC, schema: schemas.registerSchema },
    async (request, reply) => {
      const result = await register(ctx, request.body, clientOf(request));
      return reply.code(201).send({ message: 'User registered' as const, ...result });
    },
  );

  app.post('/api/login', { config: PUBLIC, schema: schemas.loginSchema }, async (request) => {
    const result = await login(ctx, request.body.email, request.body.password, clientOf(request));
    return { message: 'Login successful' as const, ...result };
  });

  app.post(
    '/api/refresh-token',
    { config: PUBLIC, schema: schemas.refreshSchema },
    async (request) => {
      const tokens = await refreshSession(ctx, request.body.refresh_token);
      return { message: 'Token refreshed' as const, ...tokens };
    },
  );

  app.post('/api/logout', { config: BEARER, schema: schemas.logoutSchema }, async (request) => {
    await logout(ctx, callerOf(request), request.body.all === true);
    return { message: 'Logged out' as const };
  });

  app.post(
    '/api/send-confirmation-code',
    { config: OPTIONAL, schema: schemas.sendConfirmationCodeSchema },
    async (request) => {
      await sendConfirmationCode(ctx, request.body.email, request.caller);
      return { message: 'Confirmation code sent' as const };
    },
  );

  app.post(
    '/api/confirm-email',
    { config: OPTIONAL, schema: schemas.confirmEmailSchema },
    async (request) => {
      await confirmEmail(ctx, request.body.email, request.body.code, request.caller);
      return { message: 'Email confirmed' as const };
    },
  );

  app.post(
    '/api/change-password',
    { config: BEARER, schema: schemas.changePasswordSchema },
    async (request) => {
      await changePassword(
        ctx,
        callerOf(request),
        request.body.password,
        request.body.new_password,
      );
      return { message: 'User changed password successful' as const };
    },
  );

  app.post(
    '/api/forgot-password',
    { config: PUBLIC, schema: schemas.forgotPasswordSchema },
    async (request) => {
      await forgotPassword(ctx, request.body.email);
      return { message: 'If the address is registered, a reset code has been sent' as const };
    },
  );

  app.post(
    '/api/reset-password',
    { config: PUBLIC, schema: schemas.resetPasswordSchema },
    async (request) => {
      await resetPassword(ctx, request.body.email, request.body.code, request.body.new_password);
      return { message: 'Password reset successful' as const };
    },
  );

  app.get(
    '/api/sessions',
    { config: BEARER, schema: schemas.listSessionsSchema },
    async (request) => {
      return { sessions: await listSessions(ctx, callerOf(request)) };
    },
  );

  app.delete(
    '/api/sessions/:id',
    { config: BEARER, schema: schemas.revokeSessionSchema },
    async (request) => {
      await revokeSession(ctx, callerOf(request), request.params.id);
      return { message: 'Session revoked' as const };
    },
  );
};
