import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationPageQuery } from '../../src/chat/conversations.store.js';
import { messagesBefore } from '../../src/chat/messages.store.js';
import type { Db } from '../../src/db/database.js';
import { isPostgres } from '../../src/db/dialect.js';
import { backends } from '../helpers/backends.js';
import { queryPlan } from '../helpers/query-plan.js';
import { TestApp } from '../helpers/test-app.js';
import { seedChat, type SeededChat } from './seed.js';

/**
 * The chat's reads stay bounded however much a member has: the databases' own plans (EXPLAIN
 * QUERY PLAN on SQLite, EXPLAIN on PostgreSQL), on a seeded and ANALYZEd chat.
 */

/** The SQL text a store function runs (it builds its query inside), from a recording plugin. */
async function planOfRun(db: Db, run: (db: Db) => Promise<unknown>): Promise<string> {
  const compiled: { sql: string; parameters: readonly unknown[] }[] = [];
  await run(
    db.withPlugin({
      transformQuery: ({ node, queryId }) => {
        compiled.push(db.getExecutor().compileQuery(node, queryId));
        return node;
      },
      transformResult: async ({ result }) => result,
    }),
  );
  const [query] = compiled;
  if (query === undefined) throw new Error('nothing ran');
  return queryPlan(db, { compile: () => ({ ...query, query: { kind: 'RawNode' } }) } as never);
}

const SORT = /Sort|TEMP B-TREE/;

describe.each(backends)('chat query plans ($name)', (backend) => {
  let t: TestApp;
  let seeded: SeededChat;
  let postgres: boolean;

  beforeAll(async () => {
    t = await TestApp.start(backend);
    postgres = isPostgres(t.db);
    seeded = await seedChat(
      t.db,
      {
        senders: 800,
        conversationsPerSender: 4,
        historyMessages: 3_000,
        listUsers: 2,
        conversationsPerListUser: 600,
      },
      'not a hash',
    );
    await sql`analyze`.execute(t.db);
  }, 120_000);
  afterAll(() => t.close());

  it("a page of a member's conversations reads both activity indexes, never sorting them all", async () => {
    for (const user of seeded.listUsers) {
      const first = { unreadOnly: false, after: undefined, limit: 21 };
      const later = { ...first, after: { value: Date.now() - 86_400_000, id: 'z' } };
      for (const query of [first, later]) {
        const text = await queryPlan(t.db, conversationPageQuery(t.db, user.userId, query));
        // Each side walks its index in order and stops at the limit; only the two sides'
        // limited rows are merged (PostgreSQL sorts them, SQLite merges two short co-routines).
        for (const side of ['influencer', 'starter']) {
          if (postgres)
            expect(text).toMatch(
              new RegExp(
                `Limit\\s+[^]*?->  Index Scan Backward using conversations_${side}_activity`,
              ),
            );
          else
            expect(text).toMatch(
              new RegExp(
                `SEARCH conversations USING INDEX conversations_${side}_activity \\(${side}_id=\\?`,
              ),
            );
        }
        if (!postgres) expect(text).not.toMatch(/SEARCH conversations [^\n]*\nUSE TEMP B-TREE/);
        // The listing's lookups are by key (blocks and follows, empty in this seed, may be too
        // small for an index to pay).
        expect(text).not.toMatch(/SCAN (m|lm|pu|pp|conversations|conversation_members)\b/);
        expect(text).not.toMatch(/Seq Scan on (?!blocks|follows)|Hash/);
      }
    }
  });

  it('the newest page of a long conversation reads its last rows of the seq index', async () => {
    const text = await planOfRun(t.db, (db) =>
      messagesBefore(db, seeded.history.conversationId, 2 ** 31 - 1, 51),
    );
    if (postgres) expect(text).toMatch(/Index Scan Backward using chat_messages_seq/);
    else expect(text).toMatch(/SEARCH chat_messages USING INDEX chat_messages_seq/);
    expect(text).not.toMatch(SORT);
  });
});
