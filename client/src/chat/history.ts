import type { CallMethod } from '../client.js';
import { withinMs } from '../deadline.js';
import { ApiError } from '../errors.js';
import type { ChatHistory } from './catch-up.js';

/** The longest page of the conversation list (API.md). */
const LIST_PAGE_MAX = 100;

/** How long a catch-up request may go unanswered before the connection gives up on it. */
const CATCH_UP_TIMEOUT_MS = 20_000;

/**
 * Catching up through the typed REST calls (same tokens, same renewal as every other call). Every
 * frame waits for the catch-up before it (ChatCatchUp), so a request without an answer would hold
 * every later one forever: each ends after `timeoutMs`, and the connection reconnects; or as soon
 * as the socket it catches up for is gone (`socket` aborted), so the next one's wait for nothing.
 */
export function restHistory(
  GET: CallMethod<'get'>,
  pageSize: number,
  timeoutMs = CATCH_UP_TIMEOUT_MS,
): ChatHistory {
  return {
    async changes(id, sinceVersion, socket) {
      const query = { since_version: String(sinceVersion), limit: String(pageSize) };
      try {
        return await withinMs(
          timeoutMs,
          (signal) =>
            GET('/api/chat/conversations/{id}/changes', {
              params: { path: { id }, query },
              signal,
            }),
          socket,
        );
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return null;
        throw error;
      }
    },
    overview: (socket) =>
      withinMs(
        timeoutMs,
        async (signal) => {
          const [list, unread] = await Promise.all([
            GET('/api/chat/conversations', { signal }),
            GET('/api/chat/unread', { signal }),
          ]);
          return { conversations: list.conversations, next_cursor: list.next_cursor, unread };
        },
        socket,
      ),
    more: (cursor, socket) =>
      withinMs(
        timeoutMs,
        async (signal) => {
          const query = { cursor, limit: String(LIST_PAGE_MAX) };
          const list = await GET('/api/chat/conversations', { params: { query }, signal });
          return { conversations: list.conversations, next_cursor: list.next_cursor };
        },
        socket,
      ),
  };
}
