import type { Db } from '../db/database.js';
import { deleteUser, lockAccount } from './users.store.js';
import { inTransaction } from '../db/transaction.js';

/**
 * What a group removes or rewrites of an account's data when the account is deleted. Runs inside
 * the deletion's transaction, before the account row goes, so the account and everything of it
 * disappear together or not at all. Each group contributes one (listed in app.ts). A hook may
 * answer what to do once the transaction has ended: told whether it committed (then e.g. publish
 * events, never before), or not (an attempt rolled back: release what it held).
 */
export type AccountDeletionHook = (trx: Db, userId: string) => Promise<AfterTransaction | void>;

export type AfterTransaction = (committed: boolean) => void;

/**
 * What must still hold once the account is locked, or nothing is deleted (it answers false, or
 * throws): e.g. that the password checked before is still the account's.
 */
export type DeletionPrecondition = (trx: Db) => Promise<boolean>;

/**
 * Deletes the account with its sessions and codes, and runs every group's hook, in ONE
 * transaction. Answers false, having deleted nothing, when `holds` answers false.
 */
export async function deleteAccountRecords(
  db: Db,
  userId: string,
  hooks: readonly AccountDeletionHook[],
  holds: DeletionPrecondition = async () => true,
): Promise<boolean> {
  const pending: AfterTransaction[] = [];
  const settle = (committed: boolean) => {
    for (const then of pending.splice(0)) then(committed);
  };
  let deleted: boolean;
  try {
    deleted = await inTransaction(db, async (trx) => {
      settle(false); // a second attempt starts over
      await lockAccount(trx, userId);
      if (!(await holds(trx))) return false;
      for (const hook of hooks) {
        const then = await hook(trx, userId);
        if (then !== undefined) pending.push(then);
      }
      await deleteUser(trx, userId);
      return true;
    });
  } catch (error) {
    settle(false);
    throw error;
  }
  settle(deleted);
  return deleted;
}
