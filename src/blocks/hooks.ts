import type { Db } from '../db/database.js';

/**
 * What another group undoes when one account blocks another (the Influencer group removes the
 * follows between them, with their counts). Runs inside the block's transaction; listed in app.ts.
 */
export type BlockHook = (trx: Db, blockerId: string, blockedId: string) => Promise<void>;
