import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';

type Json = Record<string, unknown>;

/** The Chat group's operations (API.md, blocks included), with their operationIds. */
const OPERATIONS: [method: string, path: string, operationId: string][] = [
  ['post', '/api/chat/conversations', 'startConversation'],
  ['get', '/api/chat/conversations', 'listConversations'],
  ['get', '/api/chat/conversations/{id}', 'getConversation'],
  ['get', '/api/chat/unread', 'getUnreadCounts'],
  ['post', '/api/chat/conversations/{id}/messages', 'sendMessage'],
  ['get', '/api/chat/conversations/{id}/messages', 'listMessages'],
  ['get', '/api/chat/conversations/{id}/changes', 'listMessageChanges'],
  ['post', '/api/chat/conversations/{id}/read', 'markConversationRead'],
  ['patch', '/api/chat/messages/{id}', 'editMessage'],
  ['delete', '/api/chat/messages/{id}', 'deleteMessage'],
  ['put', '/api/blocks/{user_id}', 'blockUser'],
  ['delete', '/api/blocks/{user_id}', 'unblockUser'],
  ['get', '/api/blocks', 'listBlocks'],
];

describe.each(backends)('the Chat group in /openapi.json ($name)', (backend) => {
  let t: TestApp;
  let doc: Json;
  beforeAll(async () => {
    t = await TestApp.start(backend);
    doc = (await t.call('GET', '/openapi.json')).json();
  });
  afterAll(() => t.close());

  const operation = (method: string, path: string) =>
    (doc.paths as Record<string, Record<string, Json>>)[path]?.[method];

  it.each(OPERATIONS)('%s %s is %s, tagged Chat, bearer only', (method, path, operationId) => {
    const documented = operation(method, path);
    expect(documented?.operationId).toBe(operationId);
    expect(documented?.tags).toEqual(['Chat']);
    expect(documented?.security).toEqual([{ bearerAuth: [] }]);
  });

  it('documents 201 and 200 for a send and a start, and the replay header', () => {
    const send = operation('post', '/api/chat/conversations/{id}/messages')?.responses as Record<
      string,
      { headers?: Json }
    >;
    expect(Object.keys(send)).toEqual(expect.arrayContaining(['200', '201', '4XX', '5XX']));
    expect(send['200']?.headers).toHaveProperty('Idempotent-Replayed');
    const start = operation('post', '/api/chat/conversations')?.responses as Json;
    expect(Object.keys(start)).toEqual(expect.arrayContaining(['200', '201']));
  });

  it('documents the chat_message and conversation objects as components', () => {
    const schemas = (doc.components as { schemas: Record<string, { required: string[] }> }).schemas;
    expect(schemas.ChatMessage?.required).not.toContain('client_message_id');
    expect([...(schemas.ChatMessage?.required ?? [])].sort()).toEqual(
      [
        'id',
        'conversation_id',
        'seq',
        'sender_id',
        'text',
        'created_at',
        'edited_at',
        'deleted',
        'version',
      ].sort(),
    );
    expect(schemas.Conversation?.required).toHaveLength(13);
  });
});
