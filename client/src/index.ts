export { createAccountClient } from './client.js';
export type { AccountClient, AccountClientOptions, CallMethod } from './client.js';
export { backoffDelay, DEFAULT_BACKOFF } from './chat/backoff.js';
export type { BackoffPolicy } from './chat/backoff.js';
export { ChatCatchUp } from './chat/catch-up.js';
export type { ChatHistory, ChatOverview } from './chat/catch-up.js';
export { ChatCloseCodes, closeVerdict } from './chat/close-codes.js';
export type { CloseVerdict } from './chat/close-codes.js';
export type {
  ChatConnection,
  ChatConnectionOptions,
  WebSocketConstructor,
} from './chat/connection.js';
export type * from './chat/events.js';
export { parseServerFrame } from './chat/frames.js';
export type { MessageFrame, ServerFrame } from './chat/frames.js';
export type { LivenessOptions } from './chat/liveness.js';
export { chatSocketUrl } from './chat/socket-url.js';
export { ApiError, UnexpectedResponseError } from './errors.js';
export type { ApiErrorCode, ErrorBody, FieldProblem } from './errors.js';
export type { Fetch } from './session.js';
export { memoryTokenStore, webStorageTokenStore } from './token-store.js';
export type { Tokens, TokenStore, WebStorage } from './token-store.js';
export type * from './types.js';
export type { components, operations, paths } from './schema.gen.js';
