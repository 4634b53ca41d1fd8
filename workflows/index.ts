/** Every workflow the worker registers. Deterministic code only: no I/O, no imports from src/. */
export { nonceRetentionWorkflow } from './nonce-retention';
