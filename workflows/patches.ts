/**
 * Every `patched()` id in the workflows, with the workflow type it branches. Workflows take their
 * ids from here, and `admin workflows patches` counts, per entry, the open runs that have not
 * recorded the patch (visibility's TemporalChangeVersion, which the SDK sets when a run takes the
 * new branch): a patch is retired (deprecatePatch, then removed) only when that count is 0.
 */
export const PATCHES = {
  fulfilmentJoinedSteps: { workflowType: 'orderFulfilmentWorkflow', patchId: 'fulfilment-joined-steps' },
  recoveryReferralWindows: { workflowType: 'fulfilmentRecoveryWorkflow', patchId: 'start-unstarted-referral-windows' },
  deliveryWakeUpsCount: { workflowType: 'webhookDeliveryWorkflow', patchId: 'delivery-wake-ups-count' },
  boundedCancelPolling: { workflowType: 'orderFulfilmentWorkflow', patchId: 'bounded-cancel-polling' },
  recoveryStalledPayments: { workflowType: 'fulfilmentRecoveryWorkflow', patchId: 'settle-stalled-payments' },
  checkoutCommissionWindow: { workflowType: 'checkoutSessionWorkflow', patchId: 'service-commission-window' },
  checkoutWindowSingleCall: { workflowType: 'checkoutSessionWorkflow', patchId: 'checkout-window-single-call' },
  deliveryFailingEmail: { workflowType: 'webhookDeliveryWorkflow', patchId: 'delivery-failing-email' },
} as const;
