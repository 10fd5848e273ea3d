import type { ServiceContext } from '../context.js';
import { Errors } from '../errors.js';
import type { Db } from '../db/database.js';
import { inTransaction } from '../db/transaction.js';
import { raiseReadSeq } from './conversations.store.js';
import { publishReadEvent } from './events.js';
import type { Membership } from './membership.js';
import { findReadState } from './unread.store.js';

export interface ReadState {
  readonly last_read_seq: number;
  readonly unread_count: number;
}

/**
 * Marks the conversation read up to `seq` (default: its last message). The read position never
 * moves back; reads change no version. Only a read that moved it is an event, to the reader.
 */
export async function markRead(
  ctx: ServiceContext,
  { userId, conversation }: Membership,
  seq: number | undefined,
): Promise<ReadState> {
  const target = seq ?? conversation.last_seq;
  if (target > conversation.last_seq) {
    throw Errors.validationFailed([
      {
        field: 'seq',
        message: `must not be above the conversation's last_seq (${conversation.last_seq})`,
      },
    ]);
  }
  // One transaction: a move whose answer (the count) fails is undone, so the client's retry moves
  // it again and publishes the event; committed alone, the retry would move nothing and the
  // reader's other devices would never hear of the read.
  const { moved, state } = await inTransaction(ctx.db, async (trx) => ({
    moved: await raiseReadSeq(trx, conversation.id, userId, target),
    state: await readState(trx, conversation.id, userId),
  }));
  if (moved) publishReadEvent(ctx, userId, { conversation_id: conversation.id, ...state });
  return state;
}

async function readState(db: Db, conversationId: string, userId: string): Promise<ReadState> {
  const state = await findReadState(db, conversationId, userId);
  // The reader's account was deleted since its membership was looked up.
  if (state === undefined) throw Errors.notFound();
  return state;
}
