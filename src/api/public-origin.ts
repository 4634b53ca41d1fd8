/**
 * The origin of the links this service hands out (checkout, progress, tracking): PUBLIC_BASE_URL,
 * else the host the partner's request came to (development; production sets PUBLIC_BASE_URL).
 */
export function publicOrigin(publicBaseUrl: string | undefined, headers: Record<string, string | string[] | undefined>): string {
  return publicBaseUrl ?? `http://${String(headers.host ?? 'localhost')}`;
}
