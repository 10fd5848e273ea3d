import {
  ChatCatchUp,
  parseServerFrame,
  type ChangesPage,
  type ChatEvent,
  type ChatHistory,
  type ChatOverview,
  type ServerFrame,
} from '../../../client/src/index.js';
import { SocketClient } from './socket-client.js';

/** The `chat_message` fields the client keeps. */
interface CachedMessage {
  readonly id: string;
  readonly seq: number;
  readonly sender_id: string | null;
  readonly text: string | null;
  readonly deleted: boolean;
  readonly version: number;
}

/** GET `url` with a bearer token, answering the JSON body of a 200 (throws otherwise). */
export type HttpGet = (url: string, token: string) => Promise<Record<string, unknown>>;

interface CachedConversation {
  lastReadSeq: number;
  readonly messages: Map<string, CachedMessage>;
}

/**
 * A chat client that follows API.md's catch-up rule through the client package's ChatCatchUp
 * (the one its `connectChat` uses), over a raw `ws` socket this harness controls: it can lose
 * events on their way in and drop the socket at will. It keeps what a real app would: each
 * conversation's messages (applied by id, as ChatCatchUp hands them over) and read position.
 */
export class CatchUpClient {
  readonly conversations = new Map<string, CachedConversation>();
  /** `resync_required` frames handled. */
  resyncs = 0;
  private socket: SocketClient | undefined;
  private readonly catchUp: ChatCatchUp;
  /** While set, events are lost on their way in (as when this instance's subscription is down). */
  losing = false;
  failure: unknown;

  constructor(
    private readonly http: HttpGet,
    private readonly socketUrl: string,
    readonly userId: string,
    private readonly token: () => string,
    conversationIds: readonly string[],
  ) {
    for (const id of conversationIds) {
      this.conversations.set(id, { lastReadSeq: 0, messages: new Map() });
    }
    const history: ChatHistory = {
      changes: (id, since) => this.changes(id, since),
      overview: () => this.overview(),
    };
    this.catchUp = new ChatCatchUp(
      history,
      (event) => this.apply(event),
      conversationIds.map((id) => [id, 0] as const),
    );
  }

  get connected(): boolean {
    return this.socket?.isOpen ?? false;
  }

  /** The conversation's version as the client has it. */
  version(conversationId: string): number | undefined {
    return this.catchUp.version(conversationId);
  }

  async connect(): Promise<void> {
    const socket = await SocketClient.connect(this.socketUrl, { token: this.token() });
    this.socket = socket;
    socket.ws.on('message', (data) => this.receive(parseServerFrame(String(data))));
    await socket.waitFor('ready');
  }

  disconnect(): Promise<unknown> {
    const socket = this.socket;
    this.socket = undefined;
    socket?.close();
    return socket?.closed ?? Promise.resolve();
  }

  /** Resolves once every frame received so far has been handled. */
  settled(): Promise<void> {
    return this.catchUp.settled();
  }

  /** Unread as the client can tell: the peer's live messages above its read position. */
  unreadCount(conversationId: string): number {
    const cached = this.conversations.get(conversationId);
    if (cached === undefined) return 0;
    let unread = 0;
    for (const message of cached.messages.values()) {
      const fromPeer = message.sender_id !== this.userId;
      if (fromPeer && !message.deleted && message.seq > cached.lastReadSeq) unread += 1;
    }
    return unread;
  }

  private receive(frame: ServerFrame | undefined): void {
    if (frame === undefined) return;
    const isEvent = frame.type.startsWith('message.') || frame.type === 'conversation.read';
    if (isEvent && this.losing) return;
    if (frame.type === 'resync_required') this.resyncs += 1;
    this.catchUp.receive(frame).catch((error: unknown) => {
      this.failure ??= error;
    });
  }

  /** What ChatCatchUp hands over, kept as an app would keep it. */
  private apply(event: ChatEvent): void {
    if (event.type === 'sync') {
      for (const conversation of event.conversations)
        this.read(conversation.id, conversation.last_read_seq);
      return;
    }
    if (event.type === 'conversation.read')
      return this.read(event.conversation_id, event.last_read_seq);
    if (event.type === 'typing') return;
    const cached = this.conversations.get(event.conversation_id);
    const { id, seq, sender_id, text, deleted, version } = event.chat_message;
    cached?.messages.set(id, { id, seq, sender_id, text, deleted, version });
  }

  private read(conversationId: string, lastReadSeq: number): void {
    const cached = this.conversations.get(conversationId);
    if (cached !== undefined) cached.lastReadSeq = Math.max(cached.lastReadSeq, lastReadSeq);
  }

  private async changes(id: string, since: number): Promise<ChangesPage> {
    const url = `/api/chat/conversations/${id}/changes?since_version=${since}&limit=50`;
    return (await this.get(url)) as unknown as ChangesPage;
  }

  private async overview(): Promise<ChatOverview> {
    type List = Pick<ChatOverview, 'conversations' | 'next_cursor'>;
    const { conversations, next_cursor } = (await this.get(
      '/api/chat/conversations?limit=100',
    )) as unknown as List;
    const unread = (await this.get('/api/chat/unread')) as unknown as ChatOverview['unread'];
    return { conversations, next_cursor, unread };
  }

  private get(url: string): Promise<Record<string, unknown>> {
    return this.http(url, this.token());
  }
}

/** What the server says one member should have: every message, the version, read and unread. */
export async function serverState(http: HttpGet, token: string, id: string) {
  const messages: CachedMessage[] = [];
  for (let after = 0; ;) {
    const url = `/api/chat/conversations/${id}/messages?after=${after}&limit=100`;
    const page = await http(url, token);
    messages.push(...(page.messages as CachedMessage[]));
    if (!page.has_more) break;
    after = messages[messages.length - 1]!.seq;
  }
  const { conversation } = await http(`/api/chat/conversations/${id}`, token);
  const { version, last_read_seq, unread_count } = conversation as Record<string, number>;
  const kept = messages.map(({ id, seq, sender_id, text, deleted, version }) => ({
    ...{ id, seq, sender_id, text, deleted, version },
  }));
  return { messages: kept, version, last_read_seq, unread_count };
}

/** The same, as the client has it. */
export function clientState(client: CatchUpClient, id: string) {
  const cached = client.conversations.get(id);
  if (cached === undefined) throw new Error(`conversation ${id} is not cached`);
  return {
    messages: [...cached.messages.values()].sort((a, b) => a.seq - b.seq),
    version: client.version(id),
    last_read_seq: cached.lastReadSeq,
    unread_count: client.unreadCount(id),
  };
}
