import type { ResolvedCredential } from '../auth/credentials';
import type { Logger } from 'pino';
import type { Environment } from '../config';
import type { Scope } from '../auth/scopes';

/** Who is calling, once the signature has been checked. */
export interface AuthContext {
  keyId: string;
  partnerId: string;
  environment: Environment;
  scopes: readonly Scope[];
}

export interface AppState {
  requestId: string;
  log: Logger;
  auth?: AuthContext;
  rawBody?: Buffer;
  /** The query's decoded pairs as signed (authenticate parses them once; validation reads them). */
  queryPairs?: Array<[string, string]>;
  /** Those pairs by name (a repeated name: an array), made once by whichever step needs them first. */
  rawQuery?: Record<string, string | string[]>;
  /** See RouteSpec.admittedRead. */
  admittedRead?: Record<string, unknown> | null;
  /** The request's credential, resolved from its key id before the body was read (requireKeyId). */
  credential?: ResolvedCredential;
  /** What the route's precondition answered. */
  checked?: unknown;
}
