/**
 * Request signing (CONTRACT §1): the one implementation lives in the partner SDK (sdk/src/signing.ts),
 * so the server verifies with exactly the code partners sign with.
 */
export * from '../../sdk/src/signing';
