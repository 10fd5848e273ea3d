export { createAccountClient } from './client.js';
export type { AccountClient, AccountClientOptions, CallMethod } from './client.js';
export { ApiError, UnexpectedResponseError } from './errors.js';
export type { ApiErrorCode, ErrorBody, FieldProblem } from './errors.js';
export type { Fetch } from './session.js';
export { memoryTokenStore, webStorageTokenStore } from './token-store.js';
export type { Tokens, TokenStore, WebStorage } from './token-store.js';
export type * from './types.js';
export type { components, operations, paths } from './schema.gen.js';
