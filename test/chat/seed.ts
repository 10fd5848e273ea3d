import { randomBytes, randomUUID } from 'node:crypto';
import type { SessionRow } from '../../src/auth/sessions.store.js';
import type { UserRow } from '../../src/accounts/users.store.js';
import { seededAccountRow } from '../helpers/seeded-account.js';
import {
  insertConversation,
  pairKey,
  raiseReadSeq,
  type ConversationRow,
} from '../../src/chat/conversations.store.js';
import { legacyTextDigest, parseMessageText } from '../../src/chat/message-text.js';
import type { MessageRow } from '../../src/chat/messages.store.js';
import type { Db } from '../../src/db/database.js';
import { newProfile } from '../../src/influencer/profiles.js';
import { insertProfiles } from '../../src/influencer/profiles.store.js';
import { facetsOf } from '../../src/influencer/search-text.js';
import { createAccessTokens } from '../../src/security/access-tokens.js';
import { REFRESH_TOKEN_TTL_MS } from '../../src/security/refresh-tokens.js';
import { createSecretBox } from '../../src/security/secret-box.js';
import { deriveServerKeys } from '../../src/security/server-keys.js';
import { randomSource } from '../influencer/seed.js';

/**
 * What the chat benchmark needs in the database (bench/chat.mjs sizes it):
 * - `senders` fans and as many influencers; fan f talks with influencers f … f+k−1 (mod senders),
 *   so everyone is in `conversationsPerSender` (k) conversations and no pair repeats;
 * - one conversation of `historyMessages` messages between a fan and an influencer of its own;
 * - `listUsers` accounts (half influencers, half fans) with `conversationsPerListUser`
 *   conversations each, with the first fans or influencers of the senders.
 */
export interface ChatPlan {
  readonly senders: number;
  readonly conversationsPerSender: number;
  readonly historyMessages: number;
  readonly listUsers: number;
  readonly conversationsPerListUser: number;
}

/** An account with a live session (the benchmark signs an access token for it). */
export interface SeededMember {
  readonly userId: string;
  readonly sessionId: string;
}

/** One member's side of one conversation: who may send there. */
interface SendingSide {
  readonly conversationId: string;
  readonly member: SeededMember;
}

export interface SeededChat {
  /**
   * Every (member, conversation) pair of the senders' conversations, in an order where each
   * pair comes back once per round and each member once every ~2 × `senders` places.
   */
  readonly sides: readonly SendingSide[];
  readonly history: { readonly conversationId: string; readonly members: SeededMember[] };
  readonly listUsers: readonly SeededMember[];
  /** Rows written, for the report. */
  readonly counts: { users: number; conversations: number; messages: number };
}

const CHUNK = 500;
const MINUTE = 60_000;
const MONTH = 30 * 24 * 60 * MINUTE;

const SAYINGS = [
  'Hi! Loved your last video',
  'Thanks so much, that means a lot 🙏',
  'Will you do a part two?',
  'Maybe next month — filming takes a while',
  'Où as-tu trouvé cette veste ?',
  'Привет! Когда следующий стрим?',
  'The recipe worked, my kids ate everything',
  'Can you share the playlist from Saturday?',
];

/** A session as `startSession` writes it, last used now. */
function sessionRow(userId: string, now: number): SessionRow {
  return {
    id: randomUUID(),
    user_id: userId,
    refresh_seed: randomBytes(32).toString('hex'),
    refresh_generation: 0,
    recent_rotations: null,
    user_agent: 'chat benchmark seed',
    ip: '10.200.0.1',
    created_at: now,
    last_used_at: now,
    expires_at: now + REFRESH_TOKEN_TTL_MS,
  };
}

/** A message as a send stores it (its text parsed and digested the same way). */
function messageRow(
  conversationId: string,
  senderId: string,
  seq: number,
  text: string,
  createdAt: number,
): MessageRow {
  const parsed = parseMessageText(text);
  return {
    id: randomUUID(),
    conversation_id: conversationId,
    seq,
    version: seq,
    sender_id: senderId,
    client_message_id: randomUUID(),
    text_digest: legacyTextDigest(parsed),
    text: parsed,
    created_at: createdAt,
    edited_at: null,
    deleted_at: null,
  };
}

/** A conversation of `fan` with `influencer` holding `messages` (the influencer has answered). */
function conversationRow(
  fan: string,
  influencer: string,
  messages: readonly MessageRow[],
  createdAt: number,
): ConversationRow {
  const last = messages.at(-1);
  const answer = messages.find((m) => m.sender_id === influencer);
  return {
    id: messages[0]?.conversation_id ?? randomUUID(),
    influencer_id: influencer,
    starter_id: fan,
    pair_key: pairKey(fan, influencer),
    accepted_at: answer?.created_at ?? null,
    last_seq: last?.seq ?? 0,
    version: last?.version ?? 0,
    created_at: createdAt,
    last_message_at: last?.created_at ?? null,
    activity_at: last?.created_at ?? createdAt,
  };
}

interface Account {
  readonly member: SeededMember;
  readonly user: UserRow;
  readonly session: SessionRow;
}

class Accounts {
  readonly all: Account[] = [];
  readonly influencers: Account[] = [];
  private readonly tag = randomBytes(3).toString('hex');

  constructor(
    private readonly passwordHash: string,
    private readonly now: number,
  ) {}

  add(kind: 'fan' | 'influencer'): SeededMember {
    const id = randomUUID();
    const n = this.all.length.toString(36);
    const user = seededAccountRow(
      id,
      `chat-${this.tag}-${kind}-${n}@seed.test`,
      this.passwordHash,
      this.now,
    );
    const session = sessionRow(id, this.now);
    const account = { member: { userId: id, sessionId: session.id }, user, session };
    this.all.push(account);
    if (kind === 'influencer') this.influencers.push(account);
    return account.member;
  }

  /** Accounts, sessions and influencer profiles (built by the service's newProfile). */
  async insert(db: Db): Promise<void> {
    await db.transaction().execute(async (trx) => {
      for (let i = 0; i < this.all.length; i += CHUNK) {
        const chunk = this.all.slice(i, i + CHUNK);
        await trx
          .insertInto('users')
          .values(chunk.map((a) => a.user))
          .execute();
        await trx
          .insertInto('sessions')
          .values(chunk.map((a) => a.session))
          .execute();
      }
      const entries = this.influencers.map(({ member }, i) => {
        const profile = newProfile(
          member.userId,
          {
            handle: `chat_${this.tag}_${i.toString(36)}`,
            display_name: `Creator ${i + 1}`,
            categories: ['music'],
            dm_policy: 'followers',
          },
          this.now,
        );
        return { profile, facets: facetsOf(profile) };
      });
      await insertProfiles(trx, entries);
    });
  }
}

/**
 * Seeds `plan` straight into the service's database, in three transactions of a few seconds
 * at most: accounts, sessions and profiles; conversations with their members (the store's
 * insertConversation); messages.
 */
export async function seedChat(
  db: Db,
  plan: ChatPlan,
  passwordHash: string,
  now = Date.now(),
): Promise<SeededChat> {
  if (plan.conversationsPerSender > plan.senders || plan.conversationsPerListUser > plan.senders)
    throw new Error('seedChat: more conversations per account than there are peers');
  const random = randomSource(7);
  const accounts = new Accounts(passwordHash, now);
  const fans = Array.from({ length: plan.senders }, () => accounts.add('fan'));
  const influencers = Array.from({ length: plan.senders }, () => accounts.add('influencer'));
  const historyMembers = [accounts.add('fan'), accounts.add('influencer')];
  const listUsers = Array.from({ length: plan.listUsers }, (_, i) =>
    accounts.add(i % 2 === 0 ? 'influencer' : 'fan'),
  );

  const someTimeAgo = () => MINUTE + Math.floor(random() * MONTH);
  const conversations: ConversationRow[] = [];
  const messages: MessageRow[] = [];
  /** A conversation whose messages alternate fan, influencer, … starting `ago` ms back. */
  const converse = (fan: string, influencer: string, count: number, ago: number) => {
    const id = randomUUID();
    const step = Math.max(1, Math.floor(ago / (count + 1)));
    const rows = Array.from({ length: count }, (_, i) =>
      messageRow(
        id,
        i % 2 === 0 ? fan : influencer,
        i + 1,
        SAYINGS[Math.floor(random() * SAYINGS.length)] as string,
        now - ago + (i + 1) * step,
      ),
    );
    conversations.push(conversationRow(fan, influencer, rows, now - ago));
    messages.push(...rows);
    return id;
  };

  // The senders' conversations, numbered c = j × senders + f; two messages each (the influencer
  // has answered, so DM policy no longer binds the fan).
  const F = plan.senders;
  for (let j = 0; j < plan.conversationsPerSender; j++) {
    for (let f = 0; f < F; f++) {
      const influencer = influencers[(f + j) % F] as SeededMember;
      converse((fans[f] as SeededMember).userId, influencer.userId, 2, someTimeAgo());
    }
  }
  const sides = sendingOrder(conversations, fans, influencers);

  const historyId = converse(
    (historyMembers[0] as SeededMember).userId,
    (historyMembers[1] as SeededMember).userId,
    plan.historyMessages,
    plan.historyMessages * MINUTE,
  );

  // The list users' conversations: 1–3 messages each, at spread-out times.
  listUsers.forEach((user, i) => {
    const peers = i % 2 === 0 ? fans : influencers;
    for (const peer of peers.slice(0, plan.conversationsPerListUser)) {
      const [fan, influencer] = i % 2 === 0 ? [peer, user] : [user, peer];
      converse(fan.userId, influencer.userId, 1 + Math.floor(random() * 3), someTimeAgo());
    }
  });

  await accounts.insert(db);
  await db.transaction().execute(async (trx) => {
    for (const row of conversations) await insertConversation(trx, row);
  });
  await db.transaction().execute(async (trx) => {
    for (let i = 0; i < messages.length; i += CHUNK)
      await trx
        .insertInto('chat_messages')
        .values(messages.slice(i, i + CHUNK))
        .execute();
    await markRead(trx, conversations, messages);
  });
  return {
    sides,
    history: { conversationId: historyId, members: historyMembers },
    listUsers,
    counts: {
      users: accounts.all.length,
      conversations: conversations.length,
      messages: messages.length,
    },
  };
}

/**
 * The sending sides in the benchmark's rotation: the fan of conversation c, then the influencer
 * of conversation c + C/2 (never both sides of one conversation back to back), for every c.
 */
function sendingOrder(
  conversations: readonly ConversationRow[],
  fans: readonly SeededMember[],
  influencers: readonly SeededMember[],
): SendingSide[] {
  const memberOf = new Map([...fans, ...influencers].map((m) => [m.userId, m]));
  const side = (row: ConversationRow, userId: string | null): SendingSide => ({
    conversationId: row.id,
    member: memberOf.get(userId as string) as SeededMember,
  });
  const count = conversations.length;
  return conversations.flatMap((row, c) => {
    const other = conversations[(c + Math.floor(count / 2)) % count] as ConversationRow;
    return [side(row, row.starter_id), side(other, other.influencer_id)];
  });
}

/**
 * Read positions as the seeded history leaves them: each sender has read up to its own last
 * message (sending marks one's side read); the rest of the peer's messages stay unread.
 */
async function markRead(
  db: Db,
  conversations: readonly ConversationRow[],
  messages: readonly MessageRow[],
): Promise<void> {
  const lastOwn = new Map<string, number>();
  for (const m of messages) lastOwn.set(`${m.conversation_id}:${m.sender_id}`, m.seq);
  for (const row of conversations) {
    for (const userId of [row.starter_id, row.influencer_id] as string[]) {
      const seq = lastOwn.get(`${row.id}:${userId}`);
      if (seq === undefined) continue;
      await raiseReadSeq(db, row.id, userId, seq);
    }
  }
}

/**
 * Access tokens for seeded sessions, signed as the service signs them: with its active signing
 * key, read from its database and opened with the key it derives from its APP_SECRET.
 */
export async function signAccessTokens(
  db: Db,
  service: { readonly appSecret: string; readonly issuer: string },
  members: readonly SeededMember[],
): Promise<Map<string, string>> {
  const box = createSecretBox(deriveServerKeys(service.appSecret).secretBox);
  const tokens = await createAccessTokens({ db, box, issuer: service.issuer, clock: Date.now });
  const signed = new Map<string, string>();
  for (const { userId, sessionId } of members) {
    if (!signed.has(sessionId)) signed.set(sessionId, await tokens.sign({ userId, sessionId }));
  }
  return signed;
}
