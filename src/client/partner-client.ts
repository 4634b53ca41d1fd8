/**
 * The partner SDK's module (sdk/src/partner-client.ts), where the code partners install lives; the
 * server, its tests and benchmarks use it from here, with one difference: this PartnerClient sends
 * each request once and returns every answer as it comes (no retry unless given a RetryPolicy),
 * since they test those answers or retry in a way of their own.
 */
import { PartnerClient as SdkPartnerClient, type PartnerCredential, type RetryPolicy } from '../../sdk/src/partner-client';

export * from '../../sdk/src/partner-client';

export class PartnerClient extends SdkPartnerClient {
  constructor(baseUrl: string, credential: PartnerCredential, clock: () => number = Date.now, retry: RetryPolicy | false = false) {
    super(baseUrl, credential, clock, retry);
  }
}
