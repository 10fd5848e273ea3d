// `npm run bench:sqlite-floor`: what SQLite alone costs per chat send, without HTTP, Kysely or the
// service: the floor under the send scenario's CPU per request (bench/README.md, Chat).
//
// The schema comes from the service's own migrations; the statements are a send's on SQLite
// (src/chat/conversations.store.ts, send.store.ts, messages.store.ts): the membership read (without
// its two block probes), then
// in one transaction the numbering UPDATE … RETURNING, the message INSERT and the sender's read
// position, over 5,000 conversations of 1,000 users, each send to another conversation. It runs
// them with the service's settings (WAL, synchronous=NORMAL, SQLite's automatic checkpoint at
// 1,000 pages), then with the checkpoints off and with no fsync at all, to show what each costs.
// Neither of the last two is safe to ship: without checkpoints the log grows without bound, and
// without fsync a power cut can corrupt the file.
//
//   npm run bench:sqlite-floor               30,000 sends per setting, each setting 3 times
//   npm run bench:sqlite-floor -- --sends 10000 --rounds 1
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { openDatabase } from '../dist/db/database.js';
import { migrateToLatest } from '../dist/db/migrate.js';

const { values: args } = parseArgs({
  options: {
    sends: { type: 'string', default: '30000' },
    rounds: { type: 'string', default: '3' },
  },
});
const SENDS = Number(args.sends);
const ROUNDS = Number(args.rounds);
const USERS = 1_000;
const CONVERSATIONS = 5_000;

/** The settings compared: the service's first. */
const SETTINGS = [
  { name: 'as the service runs (WAL, synchronous=NORMAL, checkpoint at 1,000 pages)', pragmas: [] },
  {
    name: 'checkpoints off (wal_autocheckpoint=0): the log grows',
    pragmas: ['wal_autocheckpoint = 0'],
  },
  { name: 'no fsync (synchronous=OFF): not crash-safe', pragmas: ['synchronous = OFF'] },
];

const dir = mkdtempSync(join(tmpdir(), 'sqlite-send-floor-'));
try {
  const seeded = join(dir, 'seeded.db');
  const conversations = await seed(seeded);
  console.log(
    `${SENDS} sends per run over ${CONVERSATIONS} conversations of ${USERS} users, ` +
      `${ROUNDS} round(s); µs per send (the membership read, then one transaction):`,
  );
  const results = SETTINGS.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    SETTINGS.forEach((setting, i) => {
      const file = join(dir, `run-${round}-${i}.db`);
      copyFileSync(seeded, file);
      results[i].push(runSends(file, setting.pragmas, conversations));
      for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
    });
  }
  SETTINGS.forEach((setting, i) => {
    const runs = results[i].map((us) => us.toFixed(0)).join(', ');
    console.log(`  ${setting.name}: ${runs}`);
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/** The service's schema, then users, conversations and their members, checkpointed into the file. */
async function seed(path) {
  const db = await openDatabase({ kind: 'sqlite', path });
  await migrateToLatest(db);
  await db.destroy();
  const sqlite = new Database(path);
  const now = Date.now();
  const users = Array.from({ length: USERS }, () => randomUUID());
  const conversations = [];
  sqlite.transaction(() => {
    const user = sqlite.prepare(
      'insert into users (id, email, email_normalized, password_hash, created_at, updated_at) values (?, ?, ?, ?, ?, ?)',
    );
    users.forEach((id, i) => user.run(id, `u${i}@example.com`, `u${i}@example.com`, 'x', now, now));
    const conversation = sqlite.prepare(
      'insert into conversations (id, influencer_id, starter_id, pair_key, accepted_at, last_seq, version, created_at, last_message_at, activity_at) values (?, ?, ?, ?, ?, 0, 0, ?, null, ?)',
    );
    const member = sqlite.prepare(
      'insert into conversation_members (conversation_id, user_id, last_read_seq) values (?, ?, 0)',
    );
    for (let c = 0; c < CONVERSATIONS; c++) {
      const influencer = users[c % USERS];
      const fan =
        users[((c % USERS) + 1 + ((c * 13 + Math.floor(c / USERS)) % (USERS - 1))) % USERS];
      const id = randomUUID();
      conversation.run(id, influencer, fan, `${c}`, now, now, now);
      member.run(id, influencer);
      member.run(id, fan);
      conversations.push({ id, members: [influencer, fan] });
    }
  })();
  sqlite.exec('analyze');
  sqlite.pragma('wal_checkpoint(TRUNCATE)');
  sqlite.close();
  return conversations;
}

/** µs per send over SENDS sends, with the service's pragmas and then `pragmas`. */
function runSends(path, pragmas, conversations) {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  for (const pragma of pragmas) db.pragma(pragma);
  const membership = db.prepare(
    'select c.id, c.last_seq, c.version, m.last_read_seq from conversations c join conversation_members m on m.conversation_id = c.id and m.user_id = +? where c.id = +?',
  );
  const number = db.prepare(
    // As src/chat/send.store.ts numberSend: the time never before the latest activity, and only
    // while both members exist with no block between them.
    'update conversations set last_seq = last_seq + 1, version = version + 1, last_message_at = case when activity_at > cast(+? as bigint) then activity_at else cast(+? as bigint) end, activity_at = case when activity_at > cast(+? as bigint) then activity_at else cast(+? as bigint) end, accepted_at = case when accepted_at is null and influencer_id = +? then cast(+? as bigint) else accepted_at end where id = +? and influencer_id is not null and starter_id is not null and not exists (select 1 from blocks where blocker_id = conversations.influencer_id and blocked_id = conversations.starter_id) and not exists (select 1 from blocks where blocker_id = conversations.starter_id and blocked_id = conversations.influencer_id) returning last_seq, version, last_message_at',
  );
  const insert = db.prepare(
    'insert into chat_messages (id, conversation_id, seq, version, sender_id, client_message_id, text_digest, text, created_at, edited_at, deleted_at) values (+?, +?, +?, +?, +?, +?, +?, +?, +?, null, null)',
  );
  const read = db.prepare(
    'update conversation_members set last_read_seq = +? where conversation_id = +? and user_id = +? and last_read_seq < +?',
  );
  const send = db.transaction((conversation, sender, text, now) => {
    const numbers = number.get(now, now, now, now, sender, now, conversation);
    const digest = 'd'.repeat(43);
    insert.run(
      randomUUID(),
      conversation,
      numbers.last_seq,
      numbers.version,
      sender,
      randomUUID(),
      digest,
      text,
      numbers.last_message_at,
    );
    read.run(numbers.last_seq, conversation, sender, numbers.last_seq);
  });
  const started = process.hrtime.bigint();
  for (let i = 0; i < SENDS; i++) {
    const { id, members } = conversations[(i * 7919) % conversations.length];
    const sender = members[i % 2];
    membership.get(sender, id);
    send(id, sender, `a message of an ordinary length, number ${i}`, Date.now());
  }
  const us = Number(process.hrtime.bigint() - started) / 1000 / SENDS;
  db.close();
  return us;
}
