/** The partner SDK's module (sdk/src/webhooks.ts), where the code partners install lives; the server and its tests use it from here. */
export * from '../../sdk/src/webhooks';
