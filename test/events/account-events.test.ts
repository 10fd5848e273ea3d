import { describe, expect, it } from 'vitest';
import { endsSession } from '../../src/events/account-events.js';

describe('endsSession', () => {
  it('ends the listed sessions only', () => {
    const event = { type: 'session.revoked', here_too: true as const, session_ids: ['s1', 's2'] };
    expect(endsSession(event, 's2')).toBe(true);
    expect(endsSession(event, 's3')).toBe(false);
  });

  it('understands the "all but one" form instances of the earlier release publish', () => {
    const event = { type: 'session.revoked', here_too: true as const, all_except: 's1' };
    expect(endsSession(event, 's1')).toBe(false);
    expect(endsSession(event, 's2')).toBe(true);
    expect(endsSession({ ...event, all_except: null }, 's1')).toBe(true);
  });

  it('ends every session at an account deletion, and says nothing of chat events', () => {
    expect(endsSession({ type: 'account.deleted', here_too: true }, 's1')).toBe(true);
    expect(endsSession({ type: 'message.created' }, 's1')).toBeUndefined();
  });
});
