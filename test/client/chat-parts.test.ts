import { Renewal } from '../../client/src/chat/renewal.js';
// The chat connection's parts that need no service: the backoff's delays, what each close code
// means, the socket's URL, frame parsing, and listeners that throw.
import { describe, expect, it, vi } from 'vitest';
import { Backoff, retryAfterMs } from '../../client/src/chat/backoff.js';
import { ChatCatchUp, type ChatHistory } from '../../client/src/chat/catch-up.js';
import { ChatConnection, type WebSocketConstructor } from '../../client/src/chat/connection.js';
import { ChatListeners } from '../../client/src/chat/events.js';
import type { MessageFrame } from '../../client/src/chat/frames.js';
import {
  backoffDelay,
  chatSocketUrl,
  closeVerdict,
  DEFAULT_BACKOFF,
  parseServerFrame,
} from '../../client/src/index.js';

const policy = { baseMs: 1_000, capMs: 30_000, stableAfterMs: 10_000 };
/** A random source that answers `values` in turn. */
const sequence = (...values: number[]) => {
  let i = 0;
  return () => values[i++ % values.length] ?? 0;
};

describe('the reconnect backoff', () => {
  it('is uniformly random below min(cap, base × 2^attempt): full jitter', () => {
    const top = () => 0.999_999;
    expect([0, 1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, policy, top))).toEqual([
      999, 1_999, 3_999, 7_999, 15_999, 29_999, 29_999,
    ]);
    expect(backoffDelay(3, policy, () => 0)).toBe(0);
    expect(backoffDelay(3, policy, () => 0.5)).toBe(4_000);
  });

  it('stays finite and capped however many attempts failed', () => {
    for (const attempt of [31, 1_000, 1e9, Number.MAX_SAFE_INTEGER]) {
      expect(backoffDelay(attempt, policy, () => 0.999_999)).toBe(29_999);
    }
    expect(backoffDelay(-1, policy, () => 0.5)).toBe(500);
  });

  it('spreads clients over the window instead of sending them back together', () => {
    const random = sequence(0.1, 0.7, 0.35, 0.9);
    const delays = [0, 0, 0, 0].map(() => backoffDelay(2, policy, random));
    expect(delays).toEqual([400, 2_800, 1_400, 3_600]);
  });

  it('counts attempts, waits near the cap for a refusal retrying cannot fix, and forgets after a stable connection', () => {
    const backoff = new Backoff(policy, () => 0.999_999);
    expect([backoff.next(), backoff.next(), backoff.next()]).toEqual([999, 1_999, 3_999]);
    const slow = new Backoff(policy, sequence(0, 0.999_999));
    expect([slow.next('wait'), slow.next('wait')]).toEqual([15_000, 29_999]);
    backoff.closedAfter(9_999); // not stable: the count goes on
    expect(backoff.next()).toBe(7_999);
    backoff.closedAfter(undefined); // never got ready
    expect(backoff.attempt).toBe(4);
    backoff.closedAfter(10_000);
    expect(backoff.next()).toBe(999);
    expect(DEFAULT_BACKOFF).toEqual(policy);
  });

  // client/README.md: "the next attempt waits at least that long (at most 5 minutes)".
  it('follows Retry-After up to 5 minutes: a proxy asking for an hour is waited 5 minutes', () => {
    expect(retryAfterMs({ retryAfter: 42 })).toBe(42_000);
    expect(retryAfterMs({ retryAfter: 300 })).toBe(300_000);
    expect(retryAfterMs({ retryAfter: 3_600 })).toBe(300_000);
    expect(retryAfterMs(new Error('no advice'))).toBe(0);
  });

  it("spreads a shutdown's first reconnects over 4 s rather than 1 s, then doubles as usual", () => {
    const backoff = new Backoff(policy, () => 0.999_999);
    const delays = [0, 1, 2, 3].map(() => backoff.next('spread'));
    expect(delays).toEqual([3_999, 3_999, 3_999, 7_999]);
  });
});

describe('close codes', () => {
  it('renews after 4401, stops after 4403, waits after 4429, spreads after 1001 and 1013, reconnects after the rest', () => {
    const codes = [4401, 4403, 4429, 4408, 4008, 1001, 1006, 1009, 1011, 1013, 4000];
    expect(Object.fromEntries(codes.map((code) => [code, closeVerdict(code)]))).toEqual({
      4401: 'renew',
      4403: 'stop',
      4429: 'wait',
      4408: 'reconnect',
      4008: 'reconnect',
      1001: 'spread',
      1006: 'reconnect',
      1009: 'reconnect',
      1011: 'reconnect',
      1013: 'spread',
      4000: 'reconnect',
    });
  });
});

describe('the chat socket URL', () => {
  it('is the base URL with ws for http and wss for https, path prefix kept', () => {
    expect(chatSocketUrl('http://127.0.0.1:3000')).toBe('ws://127.0.0.1:3000/api/chat/ws');
    expect(chatSocketUrl('https://accounts.example.com/')).toBe(
      'wss://accounts.example.com/api/chat/ws',
    );
    expect(chatSocketUrl('https://example.com/accounts//')).toBe(
      'wss://example.com/accounts/api/chat/ws',
    );
    expect(() => chatSocketUrl('ftp://example.com')).toThrow(TypeError);
  });
});

describe('server frames', () => {
  it('parses the known frames and ignores the rest', () => {
    const ready = { type: 'ready', user_id: 'u', session_id: 's' };
    expect(parseServerFrame(JSON.stringify(ready))).toEqual(ready);
    const event = {
      type: 'message.created',
      conversation_id: 'c',
      version: 3,
      chat_message: { id: 'm' },
    };
    expect(parseServerFrame(JSON.stringify(event))).toEqual(event);
    const junk = [
      'not json',
      'null',
      '[]',
      '{"type":"dance"}',
      '{"type":"ready"}',
      '{"type":"toString"}',
      JSON.stringify({ ...event, version: '3' }),
      JSON.stringify({ ...event, chat_message: null }),
      JSON.stringify({ type: 'typing', conversation_id: 'c' }),
    ];
    for (const text of junk) expect(parseServerFrame(text), text).toBeUndefined();
    expect(parseServerFrame(new ArrayBuffer(2))).toBeUndefined();
  });
});

describe('chat listeners', () => {
  it('a listener that throws is reported to error listeners; the others still get the event', () => {
    const listeners = new ChatListeners();
    const got: string[] = [];
    const errors: unknown[] = [];
    const failure = new Error('render failed');
    listeners.on('typing', () => {
      throw failure;
    });
    listeners.on('typing', (event) => got.push(event.user_id));
    const off = listeners.on('error', (error) => errors.push(error));
    listeners.deliver({ type: 'typing', conversation_id: 'c', user_id: 'u' });
    expect(got).toEqual(['u']);
    expect(errors).toEqual([failure]);

    off(); // without error listeners, to the console
    const console = vi.spyOn(globalThis.console, 'error').mockImplementation(() => undefined);
    listeners.deliver({ type: 'typing', conversation_id: 'c', user_id: 'v' });
    expect(console).toHaveBeenCalledWith('chat listener failed', failure);
    console.mockRestore();
  });
});

/** A new-message event of conversation `c` at `version`. */
const messageAt = (version: number) =>
  ({
    type: 'message.created',
    conversation_id: 'c',
    version,
    chat_message: { version } as never,
  }) as const;

describe('catching up', () => {
  // API.md: "an event with `version` ≤ its own is dropped; `version` = its own + 1 is applied".
  it('drops an event at or below its version, applies the next one', async () => {
    const asked: number[] = [];
    const history: ChatHistory = {
      changes: async (_, since) => {
        asked.push(since);
        return { messages: [], version: since, has_more: false };
      },
      overview: async () => ({ conversations: [], next_cursor: null, unread: {} as never }),
    };
    const delivered: number[] = [];
    const catchUp = new ChatCatchUp(
      history,
      (event) => delivered.push((event as { version: number }).version),
      [['c', 5]],
    );
    for (const version of [5, 4, 6, 6, 5, 7]) await catchUp.receive(messageAt(version));
    expect(delivered).toEqual([6, 7]);
    expect(catchUp.version('c')).toBe(7);
    expect(asked).toEqual([]);
  });

  it('a conversation forgotten while its changes were being read stays forgotten', async () => {
    let answer: (page: Awaited<ReturnType<ChatHistory['changes']>>) => void = () => undefined;
    const history: ChatHistory = {
      changes: () => new Promise((resolve) => (answer = resolve)),
      overview: async () => ({ conversations: [], next_cursor: null, unread: {} as never }),
    };
    const delivered: unknown[] = [];
    const catchUp = new ChatCatchUp(history, (event) => delivered.push(event), [['c', 1]]);
    // Version 3 after 1: a gap, so the changes since 1 are read.
    const handled = catchUp.receive({
      type: 'message.created',
      conversation_id: 'c',
      version: 3,
      chat_message: { version: 3 } as MessageFrame['chat_message'],
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    catchUp.forget('c'); // the app left the conversation
    const message = { version: 3, deleted: false, edited_at: null };
    answer({ messages: [message as never], version: 3, has_more: false });
    await handled;
    expect(catchUp.version('c')).toBeUndefined();
    expect(delivered).toEqual([]);
  });
});

describe('frames of a socket dropped meanwhile', () => {
  it('are skipped: only the current socket’s frames start catch-ups', async () => {
    const asked: number[] = [];
    const history: ChatHistory = {
      changes: async (_, since) => {
        asked.push(since);
        throw new Error('503');
      },
      overview: async () => ({ conversations: [], next_cursor: null, unread: {} as never }),
    };
    const catchUp = new ChatCatchUp(history, () => undefined, [['c', 1]]);
    const socket = new AbortController();
    // The connection drops the socket on that failure, as this does.
    const first = catchUp.receive(messageAt(3), socket.signal).catch(() => socket.abort());
    for (const version of [4, 5, 6]) void catchUp.receive(messageAt(version), socket.signal);
    await first;
    await catchUp.settled();
    expect(asked).toEqual([1]);
  });
});

describe('read positions', () => {
  it('an older read arriving after a newer one (two devices, swapped on the way) is dropped; an equal one passes', async () => {
    const history: ChatHistory = {
      changes: async () => null,
      overview: async () => ({ conversations: [], next_cursor: null, unread: {} as never }),
    };
    const delivered: unknown[] = [];
    const catchUp = new ChatCatchUp(history, (event) => delivered.push(event));
    const read = (conversation: string, seq: number, unread: number) =>
      catchUp.receive({
        type: 'conversation.read',
        conversation_id: conversation,
        last_read_seq: seq,
        unread_count: unread,
      });
    await read('c', 5, 2);
    await read('c', 3, 4); // overtaken: its unread count is stale
    await read('d', 1, 0); // another conversation keeps its own position
    await read('c', 5, 1); // the same position, a message deleted since
    expect(delivered.map((e) => Object.values(e as object).slice(1))).toEqual([
      ['c', 5, 2],
      ['d', 1, 0],
      ['c', 5, 1],
    ]);
  });
});

describe('the sync after a (re)connection', () => {
  const conversation = (version: number) => ({ id: 'c', version }) as never;

  // client/README.md: "catches up each tracked conversation whose version moved or that is on
  // none of those pages".
  it('catches up a tracked conversation that is on none of the pages read', async () => {
    const asked: string[] = [];
    const history: ChatHistory = {
      changes: async (id, since) => {
        asked.push(`${id} since ${since}`);
        const message = { version: 3, deleted: false, edited_at: null };
        return { messages: [message as never], version: 3, has_more: false };
      },
      overview: async () => ({
        conversations: [{ id: 'listed', version: 9 } as never],
        next_cursor: null,
        unread: {} as never,
      }),
    };
    const delivered: string[] = [];
    const catchUp = new ChatCatchUp(history, (event) => delivered.push(event.type), [
      ['listed', 9],
      ['c', 2],
    ]);
    await catchUp.receive({ type: 'ready', user_id: 'u', session_id: 's' });
    expect(asked).toEqual(['c since 2']);
    expect(delivered).toEqual(['message.created', 'sync']);
    expect(catchUp.version('c')).toBe(3);
  });

  it('reads further pages of the list for tracked conversations not on the first, rather than asking each one’s changes', async () => {
    const tracked = Array.from({ length: 300 }, (_, i) => `c${String(i).padStart(3, '0')}`);
    const listed = (ids: string[]) => ids.map((id) => ({ id, version: 7 }) as never);
    const asked: string[] = [];
    const history: ChatHistory = {
      changes: async (id) => {
        asked.push(`changes ${id}`);
        return { messages: [], version: 7, has_more: false };
      },
      overview: async () => ({
        conversations: listed(tracked.slice(0, 20)),
        next_cursor: '20',
        unread: {} as never,
      }),
      more: async (cursor) => {
        asked.push(`more ${cursor}`);
        const from = Number(cursor);
        return {
          conversations: listed(tracked.slice(from, from + 100)),
          next_cursor: from + 100 < tracked.length ? String(from + 100) : null,
        };
      },
    };
    const catchUp = new ChatCatchUp(
      history,
      () => undefined,
      tracked.map((id) => [id, 7] as const),
    );
    await catchUp.receive({ type: 'ready', user_id: 'u', session_id: 's' });
    // Three more pages show the other 280: no conversation's changes asked (all at version 7).
    expect(asked).toEqual(['more 20', 'more 120', 'more 220']);
  });

  it('carries the list as it is after the catch-ups, not as it was before them', async () => {
    let readings = 0;
    const history: ChatHistory = {
      changes: async () => ({
        messages: [{ version: 3, deleted: false, edited_at: null } as never],
        version: 3,
        has_more: false,
      }),
      overview: async () => {
        readings += 1;
        // Before the catch-up, c stood at version 2; a message came meanwhile: 3.
        return {
          conversations: [conversation(readings === 1 ? 2 : 3)],
          next_cursor: null,
          unread: {} as never,
        };
      },
    };
    const delivered: { type: string; conversations?: { version: number }[] }[] = [];
    const catchUp = new ChatCatchUp(history, (event) => delivered.push(event as never), [['c', 1]]);
    await catchUp.receive({ type: 'ready', user_id: 'u', session_id: 's' });
    expect(delivered.map((e) => e.type)).toEqual(['message.created', 'sync']);
    expect(delivered[1]?.conversations?.[0]?.version).toBe(3);
    expect(readings).toBe(2);
  });

  it('reads the list once when nothing moved', async () => {
    let readings = 0;
    const history: ChatHistory = {
      changes: async () => null,
      overview: async () => {
        readings += 1;
        return { conversations: [conversation(1)], next_cursor: null, unread: {} as never };
      },
    };
    const catchUp = new ChatCatchUp(history, () => undefined, [['c', 1]]);
    await catchUp.receive({ type: 'ready', user_id: 'u', session_id: 's' });
    expect(readings).toBe(1);
  });
});

describe('a renewal that failed', () => {
  it('is not tried again once its failure hook stopped it (a connection closed by an error listener)', async () => {
    vi.useFakeTimers();
    try {
      let asked = 0;
      const renewal: Renewal = new Renewal(
        {
          tokens: async () => {
            asked += 1;
            throw new Error('network down');
          },
          now: () => 0,
          renewed: () => undefined,
          signedOut: () => undefined,
          failed: () => renewal.stop(),
        },
        { accessToken: 'a', refreshToken: 'r', expiresAt: 31_000 }, // due in 1 s
      );
      await vi.advanceTimersByTimeAsync(1_000);
      expect(asked).toBe(1);
      await vi.advanceTimersByTimeAsync(60_000); // past any retry
      expect(asked).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('the connection’s backoff', () => {
  /** A socket that says `ready` to any auth frame, and nothing else. */
  class ReadySocket {
    readyState = 0;
    onopen: (() => void) | null = null;
    onmessage: ((event: { data: string }) => void) | null = null;
    onclose: ((event: { code: number; reason: string }) => void) | null = null;
    onerror: (() => void) | null = null;
    constructor() {
      setTimeout(() => {
        this.readyState = 1;
        this.onopen?.();
      }, 1);
    }
    send(frame: string) {
      if (JSON.parse(frame).type !== 'auth') return;
      const ready = { type: 'ready', user_id: 'ada', session_id: 's1' };
      setTimeout(() => this.onmessage?.({ data: JSON.stringify(ready) }), 1);
    }
    close() {
      this.readyState = 3;
    }
  }

  it('counts a connection as stable only once it caught up: one whose catch-up fails keeps backing off', async () => {
    const attempts: number[] = [];
    const chat = new ChatConnection(
      {
        url: 'ws://chat.example.test/api/chat/ws',
        tokens: async () => ({ accessToken: 'a', refreshToken: 'r' }),
        renew: async () => null,
        now: Date.now,
        history: {
          changes: async () => null,
          // Fails long after `ready`: longer than a stable connection needs to stay up.
          overview: () =>
            new Promise((_, reject) => setTimeout(() => reject(new Error('503')), 60)),
        },
      },
      {
        webSocketImpl: ReadySocket as unknown as WebSocketConstructor,
        backoff: { baseMs: 1, capMs: 2, stableAfterMs: 20 },
      },
    );
    chat.on('error', () => undefined);
    chat.on('state', (state) => {
      if (state.status === 'reconnecting') attempts.push(state.attempt);
    });
    try {
      await vi.waitFor(() => expect(attempts.length).toBeGreaterThanOrEqual(3), { timeout: 5_000 });
    } finally {
      chat.close();
    }
    expect(attempts.slice(0, 3)).toEqual([0, 1, 2]);
  });
});
