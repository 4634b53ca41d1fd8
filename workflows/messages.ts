/**
 * Names shared by workflows and the API: workflow ids, signals, order statuses. Imported by both
 * sides, so it holds no I/O and nothing from src/.
 */
import { defineSignal } from '@temporalio/workflow';

/**
 * Order statuses in their order. An order starts at PAYMENT_RECORDED (the partner has charged its
 * buyer) and ends at TRANSFER_COMPLETED, TRANSFER_FAILED or REFUNDED.
 */
export const ORDER_STATUSES = [
  'PAYMENT_RECORDED',
  'DOMAIN_LOCKED',
  'TRANSFER_INITIATED',
  'TRANSFER_PENDING',
  'TRANSFER_COMPLETED',
  'TRANSFER_FAILED',
  'REFUNDED',
] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];
export const FINAL_ORDER_STATUSES: readonly OrderStatus[] = ['TRANSFER_COMPLETED', 'TRANSFER_FAILED', 'REFUNDED'];

export const quoteWorkflowId = (quotePublicId: string) => `quote:${quotePublicId}`;
export const orderWorkflowId = (orderPublicId: string) => `order:${orderPublicId}`;

/** The order recorded for this quote: the reservation ends with the sale, not with the timer. */
export const quoteConsumedSignal = defineSignal('quoteConsumed');
/** The order was refunded: stop the transfer. */
export const refundRequestedSignal = defineSignal('refundRequested');

export interface QuoteReservationInput {
  quotePublicId: string;
}

export interface OrderFulfilmentInput {
  orderId: string;
  orderPublicId: string;
}

export interface OrderFulfilmentResult {
  status: OrderStatus;
  reason?: string;
}

export const webhookWorkflowId = (partnerId: string, environment: string) => `webhooks:${partnerId}:${environment}`;
/** New events were recorded for the partner: wake its delivery workflow. */
export const eventsAppendedSignal = defineSignal('eventsAppended');

export interface WebhookDeliveryInput {
  partnerId: string;
  environment: 'sandbox' | 'live';
}
