import { TypeCompiler } from '@sinclair/typebox/compiler';
import type { RawData } from 'ws';
import { ClientFrame, type ReadyFrame } from './frame-schemas.js';

/** The chat socket's frames (API.md, "Real time"): JSON text, one object per frame. */

export type { ClientFrame } from './frame-schemas.js';
const clientFrame = TypeCompiler.Compile(ClientFrame);

/**
 * A frame from the client, or undefined for anything else: binary, not JSON, or an unknown or
 * malformed frame, which the socket ignores (API.md). Unknown fields are ignored too.
 */
export function parseClientFrame(data: RawData, isBinary: boolean): ClientFrame | undefined {
  if (isBinary) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(String(data));
  } catch {
    return undefined;
  }
  return clientFrame.Check(value) ? value : undefined;
}

export const pongFrame = JSON.stringify({ type: 'pong' });
export const resyncFrame = JSON.stringify({ type: 'resync_required' });

export function readyFrame(userId: string, sessionId: string): string {
  return JSON.stringify({
    type: 'ready',
    user_id: userId,
    session_id: sessionId,
  } satisfies ReadyFrame);
}
