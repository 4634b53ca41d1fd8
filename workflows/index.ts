/** Every workflow the worker registers. Deterministic code only: no I/O, no imports from src/. */
export { nonceRetentionWorkflow } from './nonce-retention';
export { quoteReservationWorkflow } from './quote-reservation';
export { orderFulfilmentWorkflow } from './order-fulfilment';
export { fulfilmentRecoveryWorkflow } from './fulfilment-recovery';
export { webhookDeliveryWorkflow } from './webhook-delivery';
export { monthCloseWorkflow, monthEndWorkflow, payoutRunWorkflow } from './month-end';
export { checkoutSessionWorkflow } from './checkout-session';
export { referralCommissionWorkflow } from './referral-commission';
export { brokerageCaseWorkflow } from './brokerage-case';
export { sandboxRelistWorkflow } from './sandbox-relist';
export { emailWorkflow } from './email';
export { partnerOnboardingWorkflow } from './partner-onboarding';
