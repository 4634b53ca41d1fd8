/** The partner SDK's module (sdk/src/partner-client.ts), where the code partners install lives; the server and its tests use it from here. */
export * from '../../sdk/src/partner-client';
