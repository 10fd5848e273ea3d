import type { CallMethod } from '../client.js';
import { ApiError } from '../errors.js';
import type { ChatHistory } from './catch-up.js';

/** Catching up through the typed REST calls (same tokens, same renewal as every other call). */
export function restHistory(GET: CallMethod<'get'>, pageSize: number): ChatHistory {
  return {
    async changes(id, sinceVersion) {
      const query = { since_version: String(sinceVersion), limit: String(pageSize) };
      try {
        return await GET('/api/chat/conversations/{id}/changes', {
          params: { path: { id }, query },
        });
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return null;
        throw error;
      }
    },
    async overview() {
      const [list, unread] = await Promise.all([
        GET('/api/chat/conversations'),
        GET('/api/chat/unread'),
      ]);
      return { conversations: list.conversations, next_cursor: list.next_cursor, unread };
    },
  };
}
