import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { components } from '../../client/src/schema.gen.js';
import { insertConversation, pairKey } from '../../src/chat/conversations.store.js';
import type { Account, TestApp } from '../helpers/test-app.js';
import { creator } from '../influencer/support.js';

/**
 * A conversation between a fan (who starts it) and an influencer, written straight into the
 * database through the chat store.
 */
export async function openConversation(
  t: TestApp,
  starter: Account,
  influencer: Account,
): Promise<string> {
  const id = randomUUID();
  await t.db.transaction().execute((trx) =>
    insertConversation(trx, {
      id,
      influencer_id: influencer.userId,
      starter_id: starter.userId,
      pair_key: pairKey(starter.userId, influencer.userId),
      accepted_at: null,
      last_seq: 0,
      version: 0,
      created_at: t.clock.now(),
      last_message_at: null,
      activity_at: t.clock.now(),
    }),
  );
  return id;
}

/** A response's status and error code, compared as one. */
export const errorOf = (response: LightMyRequestResponse) => [
  response.statusCode,
  response.json().error,
];

let keys = 0;
export const newKey = () => `key-${Date.now().toString(36)}-${(keys++).toString(36)}`;

/** The chat calls of the tests, as one member. */
export class ChatClient {
  constructor(
    private readonly t: TestApp,
    public account: Account,
  ) {}

  /** A fresh token pair: access tokens last 15 minutes, and tests move the clock. */
  async renewToken(): Promise<void> {
    const response = await this.t.post('/api/refresh-token', {
      refresh_token: this.account.refreshToken,
    });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    this.account = {
      ...this.account,
      accessToken: body.access_token,
      refreshToken: body.refresh_token,
    };
  }

  get userId(): string {
    return this.account.userId;
  }

  send(conversationId: string, text: string, key = newKey()): Promise<LightMyRequestResponse> {
    return this.t.post(
      `/api/chat/conversations/${conversationId}/messages`,
      { client_message_id: key, text },
      { token: this.account.accessToken },
    );
  }

  /** Sends and expects 201; answers the stored message. */
  async sent(conversationId: string, text = 'hello'): Promise<ChatMessageBody> {
    const response = await this.send(conversationId, text);
    expect(response.statusCode, response.body).toBe(201);
    return response.json().chat_message;
  }

  get(url: string): Promise<LightMyRequestResponse> {
    return this.t.call('GET', url, { token: this.account.accessToken });
  }

  call(method: 'POST' | 'PATCH' | 'DELETE' | 'PUT', url: string, body?: unknown) {
    return this.t.call(method, url, { token: this.account.accessToken, body });
  }

  async conversation(id: string): Promise<ConversationBody> {
    const response = await this.get(`/api/chat/conversations/${id}`);
    expect(response.statusCode, response.body).toBe(200);
    return response.json().conversation;
  }

  async read(conversationId: string, seq?: number) {
    const response = await this.call(
      'POST',
      `/api/chat/conversations/${conversationId}/read`,
      seq === undefined ? {} : { seq },
    );
    expect(response.statusCode, response.body).toBe(200);
    return response.json() as { last_read_seq: number; unread_count: number };
  }

  edit(messageId: string, text: string) {
    return this.call('PATCH', `/api/chat/messages/${messageId}`, { text });
  }

  delete(messageId: string) {
    return this.call('DELETE', `/api/chat/messages/${messageId}`);
  }

  async unread(): Promise<{ total_unread_count: number; unread_conversations: number }> {
    const response = await this.get('/api/chat/unread');
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }
}

/** The objects as the OpenAPI document describes them (the typed client's generated types). */
export type ChatMessageBody = components['schemas']['ChatMessage'];
export type ConversationBody = components['schemas']['Conversation'];

/** Two members of one conversation: `fan` started it with `influencer`. */
/** A fan and an influencer (a profile with `fields`), as chat clients, with no conversation yet. */
export async function fanAndCreator(
  t: TestApp,
  fields: Record<string, unknown> = { dm_policy: 'everyone' },
) {
  const made = await creator(t, { display_name: 'Ada Creator', ...fields });
  const influencer = new ChatClient(t, made.account);
  const fan = new ChatClient(t, await t.register());
  return { fan, influencer, handle: made.handle };
}

export async function twoMembers(t: TestApp) {
  const fan = new ChatClient(t, await t.register());
  const influencer = new ChatClient(t, await t.register());
  const id = await openConversation(t, fan.account, influencer.account);
  return { fan, influencer, id };
}

/** The changes feed after `since`, paged until `has_more` is false. */
export async function changesSince(client: ChatClient, id: string, since: number, limit = 200) {
  const messages: ChatMessageBody[] = [];
  let version = since;
  for (;;) {
    const url = `/api/chat/conversations/${id}/changes?since_version=${version}&limit=${limit}`;
    const page = (await client.get(url)).json();
    messages.push(...page.messages);
    version = page.version;
    if (!page.has_more) return { messages, version };
  }
}

/** POST /api/chat/conversations as `client`. */
export function start(client: ChatClient, influencerId: string) {
  return client.call('POST', '/api/chat/conversations', { influencer_id: influencerId });
}
