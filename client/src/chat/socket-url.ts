/**
 * The chat socket's URL for a client whose REST calls go to `baseUrl` + path: `http` becomes
 * `ws` and `https` becomes `wss`; a path prefix (a service behind `/accounts`) is kept.
 */
export function chatSocketUrl(baseUrl: string): string {
  const url = new URL(`${baseUrl.replace(/\/+$/, '')}/api/chat/ws`);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`baseUrl must be an http or https URL, not ${url.protocol}`);
  }
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return url.toString();
}
