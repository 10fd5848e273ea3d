// Names for the generated types an app uses most; all of them come from schema.gen.ts.
import type { components, operations } from './schema.gen.js';

type JsonBodyOf<Operation extends keyof operations> = operations[Operation] extends {
  requestBody: { content: { 'application/json': infer Body } };
}
  ? Body
  : never;

export type User = components['schemas']['User'];
export type Influencer = components['schemas']['Influencer'];

export type RegisterBody = JsonBodyOf<'register'>;
export type LoginBody = JsonBodyOf<'login'>;
export type RegisterResult =
  operations['register']['responses'][201]['content']['application/json'];
export type LoginResult = operations['login']['responses'][200]['content']['application/json'];
/** The token fields of register, login and refresh answers. */
export type TokenResult = Pick<
  operations['refreshToken']['responses'][200]['content']['application/json'],
  'access_token' | 'refresh_token' | 'token_type' | 'expires_in'
>;
