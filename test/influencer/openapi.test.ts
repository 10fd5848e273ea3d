import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { apiRouteTable } from '../helpers/route-table.js';
import { TestApp } from '../helpers/test-app.js';

type Json = Record<string, unknown>;

/** The Influencer group's operations (API.md), with the operationId each has in /openapi.json. */
const OPERATIONS: [method: string, path: string, operationId: string][] = [
  ['post', '/api/influencers', 'createInfluencerProfile'],
  ['get', '/api/influencers/me', 'getMyInfluencerProfile'],
  ['patch', '/api/influencers/me', 'updateMyInfluencerProfile'],
  ['delete', '/api/influencers/me', 'deleteMyInfluencerProfile'],
  ['get', '/api/influencers/{ref}', 'getInfluencer'],
  ['get', '/api/influencers', 'listInfluencers'],
  ['get', '/api/influencers/categories', 'listInfluencerCategories'],
  ['put', '/api/influencers/{ref}/follow', 'followInfluencer'],
  ['delete', '/api/influencers/{ref}/follow', 'unfollowInfluencer'],
  ['get', '/api/influencers/following', 'listFollowing'],
  ['get', '/api/influencers/me/followers', 'listMyFollowers'],
];

const SECURITY = {
  bearer: [{ bearerAuth: [] }],
  optional: [{}, { bearerAuth: [] }],
  public: [],
};

const ROUTES = await apiRouteTable();

describe.each(backends)('the Influencer group in /openapi.json ($name)', (backend) => {
  let t: TestApp;
  let doc: Json;
  beforeAll(async () => {
    t = await TestApp.start(backend);
    doc = (await t.call('GET', '/openapi.json')).json();
  });
  afterAll(() => t.close());

  const operation = (method: string, path: string) =>
    (doc.paths as Record<string, Record<string, Json>>)[path]?.[method];

  it.each(OPERATIONS)(
    '%s %s is %s, tagged Influencer, with the security its access declares',
    (method, path, operationId) => {
      const documented = operation(method, path);
      expect(documented, `${method} ${path}`).toBeDefined();
      expect(documented?.operationId).toBe(operationId);
      expect(documented?.tags).toEqual(['Influencer']);
      const route = ROUTES.find(
        (r) => r.method === method.toUpperCase() && r.url === path.replace(/\{(\w+)\}/g, ':$1'),
      );
      expect(route?.access).toBeDefined();
      expect(documented?.security).toEqual(SECURITY[route?.access as keyof typeof SECURITY]);
    },
  );

  it('documents the influencer object, nullable fields typed [string, null]', () => {
    const schemas = (doc.components as { schemas: Record<string, Json> }).schemas;
    const influencer = schemas.Influencer as {
      properties: Record<string, Json>;
      required: string[];
    };
    expect(influencer.properties.bio).toEqual({ type: ['string', 'null'] });
    expect(influencer.properties.avatar_url).toEqual({ type: ['string', 'null'] });
    expect(influencer.required).not.toContain('is_following');
    expect(influencer.required).not.toContain('can_message');
  });

  it('documents the directory query: q, category and sort with their values, limit and cursor', () => {
    const parameters = operation('get', '/api/influencers')?.parameters as {
      name: string;
      schema: { enum?: string[] };
    }[];
    expect(parameters.map((p) => p.name)).toEqual(['q', 'category', 'sort', 'limit', 'cursor']);
    expect(parameters.find((p) => p.name === 'sort')?.schema.enum).toEqual([
      'popular',
      'newest',
      'name',
    ]);
    expect(parameters.find((p) => p.name === 'category')?.schema.enum).toHaveLength(15);
  });
});
