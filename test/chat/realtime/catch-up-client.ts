import { SocketClient, type Frame } from './socket-client.js';

/** The `chat_message` fields the client keeps. */
export interface CachedMessage {
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
  version: number;
  lastReadSeq: number;
  readonly messages: Map<string, CachedMessage>;
}

/**
 * A chat client that follows API.md's catch-up rule, and nothing more: it keeps a `version` per
 * conversation; drops an event with `version` ≤ its own, applies own + 1, and on a higher one pages
 * `changes?since_version=<own>` until `has_more` is false; after every `ready` and on
 * `resync_required` it refetches its conversations and catches up those whose `version` moved.
 * Frames are handled one at a time, in arrival order, as a real client's reducer would.
 */
export class CatchUpClient {
  readonly conversations = new Map<string, CachedConversation>();
  /** `resync_required` frames handled. */
  resyncs = 0;
  private socket: SocketClient | undefined;
  private queue: Promise<void> = Promise.resolve();
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
      this.conversations.set(id, { version: 0, lastReadSeq: 0, messages: new Map() });
    }
  }

  get connected(): boolean {
    return this.socket?.isOpen ?? false;
  }

  async connect(): Promise<void> {
    const socket = await SocketClient.connect(this.socketUrl, { token: this.token() });
    this.socket = socket;
    socket.ws.on('message', (data) => this.enqueue(JSON.parse(String(data)) as Frame));
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
    return this.queue;
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

  private enqueue(frame: Frame): void {
    const isEvent = frame.type.startsWith('message.') || frame.type === 'conversation.read';
    if (isEvent && this.losing) return;
    this.queue = this.queue
      .then(() => this.handle(frame))
      .catch((error: unknown) => {
        this.failure ??= error;
      });
  }

  private async handle(frame: Frame): Promise<void> {
    if (frame.type === 'resync_required') this.resyncs += 1;
    if (frame.type === 'ready' || frame.type === 'resync_required') return this.resync();
    const cached = this.conversations.get(String(frame.conversation_id));
    if (cached === undefined) return;
    if (frame.type === 'conversation.read') {
      cached.lastReadSeq = Math.max(cached.lastReadSeq, Number(frame.last_read_seq));
      return;
    }
    if (!frame.type.startsWith('message.')) return;
    const version = Number(frame.version);
    if (version <= cached.version) return;
    if (version > cached.version + 1) return this.catchUp(String(frame.conversation_id), cached);
    this.keep(cached, frame.chat_message as CachedMessage);
    cached.version = version;
  }

  private async resync(): Promise<void> {
    for (const [id, cached] of this.conversations) {
      const conversation = await this.get(`/api/chat/conversations/${id}`);
      const { version, last_read_seq: lastReadSeq } = conversation.conversation as {
        version: number;
        last_read_seq: number;
      };
      cached.lastReadSeq = Math.max(cached.lastReadSeq, lastReadSeq);
      if (version !== cached.version) await this.catchUp(id, cached);
    }
  }

  private async catchUp(id: string, cached: CachedConversation): Promise<void> {
    for (;;) {
      const page = await this.get(
        `/api/chat/conversations/${id}/changes?since_version=${cached.version}&limit=50`,
      );
      for (const message of page.messages as CachedMessage[]) this.keep(cached, message);
      cached.version = page.version as number;
      if (!page.has_more) return;
    }
  }

  private keep(cached: CachedConversation, message: CachedMessage): void {
    const { id, seq, sender_id, text, deleted, version } = message;
    cached.messages.set(id, { id, seq, sender_id, text, deleted, version });
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
    version: cached.version,
    last_read_seq: cached.lastReadSeq,
    unread_count: client.unreadCount(id),
  };
}
