/**
 * Every `patched()` id in the workflows, with the workflow type it branches. Workflows take their
 * ids from here, and `admin workflows patches` reads this list: a patch goes in three releases,
 * `patched()`, then `deprecatePatch()` (set `deprecatedIn` to that release's package version),
 * then removed, each step only when the command says so (docs/design/testing.md).
 */
export interface PatchEntry {
  workflowType: string;
  patchId: string;
  /** The release (package version) whose code calls deprecatePatch(patchId) instead of patched(). */
  deprecatedIn?: string;
}

export const PATCHES = {
  fulfilmentJoinedSteps: { workflowType: 'orderFulfilmentWorkflow', patchId: 'fulfilment-joined-steps' },
  recoveryReferralWindows: { workflowType: 'fulfilmentRecoveryWorkflow', patchId: 'start-unstarted-referral-windows' },
  deliveryWakeUpsCount: { workflowType: 'webhookDeliveryWorkflow', patchId: 'delivery-wake-ups-count' },
  boundedCancelPolling: { workflowType: 'orderFulfilmentWorkflow', patchId: 'bounded-cancel-polling' },
  recoveryStalledPayments: { workflowType: 'fulfilmentRecoveryWorkflow', patchId: 'settle-stalled-payments' },
  checkoutCommissionWindow: { workflowType: 'checkoutSessionWorkflow', patchId: 'service-commission-window' },
  checkoutWindowSingleCall: { workflowType: 'checkoutSessionWorkflow', patchId: 'checkout-window-single-call' },
  deliveryFailingEmail: { workflowType: 'webhookDeliveryWorkflow', patchId: 'delivery-failing-email' },
  boundedOperatorReminders: { workflowType: 'orderFulfilmentWorkflow', patchId: 'bounded-operator-reminders' },
  quoteCancelAnswersFastForward: { workflowType: 'quoteReservationWorkflow', patchId: 'quote-cancel-answers-fast-forward' },
  // One id in the fast-forward every such workflow shares (workflows/fast-forward.ts).
  quoteFastForwardOutlivesCancel: { workflowType: 'quoteReservationWorkflow', patchId: 'fast-forward-outlives-cancel' },
  checkoutFastForwardOutlivesCancel: { workflowType: 'checkoutSessionWorkflow', patchId: 'fast-forward-outlives-cancel' },
  referralFastForwardOutlivesCancel: { workflowType: 'referralCommissionWorkflow', patchId: 'fast-forward-outlives-cancel' },
  orderFastForwardOutlivesCancel: { workflowType: 'orderFulfilmentWorkflow', patchId: 'fast-forward-outlives-cancel' },
  brokerageFastForwardOutlivesCancel: { workflowType: 'brokerageCaseWorkflow', patchId: 'fast-forward-outlives-cancel' },
} as const satisfies Record<string, PatchEntry>;

export const FAST_FORWARD_OUTLIVES_CANCEL = PATCHES.quoteFastForwardOutlivesCancel.patchId;
