import type { ServiceContext } from '../context.js';
import { Errors } from '../errors.js';
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
  const moved = await raiseReadSeq(ctx.db, conversation.id, userId, target);
  const state = await readState(ctx, conversation.id, userId);
  if (moved) publishReadEvent(ctx, userId, { conversation_id: conversation.id, ...state });
  return state;
}

async function readState(
  ctx: ServiceContext,
  conversationId: string,
  userId: string,
): Promise<ReadState> {
  const state = await findReadState(ctx.db, conversationId, userId);
  // The reader's account was deleted since its membership was looked up.
  if (state === undefined) throw Errors.notFound();
  return state;
}
