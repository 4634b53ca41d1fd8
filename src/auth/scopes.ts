/** The spec's scope table. */
export const SCOPES = ['search', 'embed', 'buy', 'broker', 'refer', 'report', 'webhook'] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** Parses "search,buy" into scopes, rejecting unknown names. */
export function parseScopes(list: string): Scope[] {
  const names = list.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = names.filter((n) => !isScope(n));
  if (unknown.length) throw new Error(`unknown scope(s): ${unknown.join(', ')}; known: ${SCOPES.join(', ')}`);
  return [...new Set(names)] as Scope[];
}
