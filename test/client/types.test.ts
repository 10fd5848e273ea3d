// Type-level tests of the generated types and the client's signatures. They are checked by the
// compiler (`npm run typecheck`, run by CI): a wrong type fails to compile, an `@ts-expect-error`
// whose error went away fails too. At run time the assertions do nothing, and no call is made.
import { describe, expectTypeOf, it } from 'vitest';
import type {
  AccountClient,
  ApiError,
  ApiErrorCode,
  Influencer,
  User,
  paths,
} from '../../client/src/index.js';

type Json<
  Path extends keyof paths,
  Method extends 'get' | 'post',
  Status extends number,
> = paths[Path][Method] extends {
  responses: Record<Status, { content: { 'application/json': infer Body } }>;
}
  ? Body
  : never;

describe('generated types', () => {
  it('a nullable field (type [X, null], or a union of a $ref with null) is `X | null`, a required one is not', () => {
    expectTypeOf<User['name']>().toEqualTypeOf<string | null>();
    expectTypeOf<User['bio']>().toEqualTypeOf<string | null>();
    expectTypeOf<User['avatar_url']>().toEqualTypeOf<string | null>();
    expectTypeOf<User['email']>().toEqualTypeOf<string>();
    expectTypeOf<Influencer['bio']>().toEqualTypeOf<string | null>();
    type Page = Json<'/api/influencers', 'get', 200>;
    expectTypeOf<Page['next_cursor']>().toEqualTypeOf<string | null>();
    type Session = Json<'/api/sessions', 'get', 200>['sessions'][number];
    expectTypeOf<Session['user_agent']>().toEqualTypeOf<string | null>();
    type Conversation = Json<'/api/chat/conversations', 'get', 200>['conversations'][number];
    expectTypeOf<Conversation['last_message_at']>().toEqualTypeOf<string | null>();
    expectTypeOf<Conversation['last_message']>().toExtend<object | null>();
    expectTypeOf<null>().toExtend<Conversation['last_message']>();

    const user = {} as User;
    // @ts-expect-error: `name` may be null
    const name: string = user.name;
    void name;
  });

  it('error codes are the union of the OpenAPI enum, not any string', () => {
    expectTypeOf<'invalid_refresh_token'>().toExtend<ApiErrorCode>();
    expectTypeOf<'weak_password'>().toExtend<ApiErrorCode>();
    expectTypeOf<'no_such_code'>().not.toExtend<ApiErrorCode>();
    expectTypeOf<string>().not.toExtend<ApiErrorCode>();
    expectTypeOf<ApiError['error']>().toEqualTypeOf<ApiErrorCode>();
    expectTypeOf<ApiError['status']>().toEqualTypeOf<number>();
    expectTypeOf<ApiError['details'][number]>().toEqualTypeOf<{ field: string; message: string }>();
  });
});

describe('client methods', () => {
  // Never called: only compiled.
  const calls = async (client: AccountClient) => {
    expectTypeOf(await client.GET('/api/profile')).toEqualTypeOf<{ user: User }>();
    const page = await client.GET('/api/influencers', { params: { query: { sort: 'newest' } } });
    expectTypeOf(page.influencers).toEqualTypeOf<Influencer[]>();
    expectTypeOf(await client.login({ email: 'a@b.c', password: 'x' })).toHaveProperty('user');

    // @ts-expect-error: no such path
    await client.GET('/api/nothing');
    // @ts-expect-error: a body field is missing
    await client.POST('/api/change-password', { body: { password: 'x' } });
    // @ts-expect-error: the path parameter is required
    await client.PUT('/api/influencers/{ref}/follow');
    // @ts-expect-error: not a sort of the enum
    await client.GET('/api/influencers', { params: { query: { sort: 'oldest' } } });
    // @ts-expect-error: the service answers GET /api/profile, not POST
    await client.POST('/api/profile', { body: {} });
  };

  it('check paths, bodies, parameters and results at compile time', () => {
    expectTypeOf(calls).toBeFunction();
  });
});
