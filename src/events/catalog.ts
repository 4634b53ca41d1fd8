/**
 * Every event type a partner receives, with when it is sent: the OpenAPI document's `webhooks`
 * section is made from this (a Record, so a new EventType without an entry does not compile).
 */
import type { EventType } from './outbox';

export const EVENT_DESCRIPTIONS: Record<EventType, string> = {
  'order.created': 'An order was recorded (partner-collected, or paid in a hosted checkout). `data` is the order.',
  'order.refunded': 'An order was refunded; its sale and any referral commission are reversed. `data` is the order with the `refund`.',
  'order.dispute_opened': "The buyer's bank disputes the card payment of a hosted-checkout sale (a chargeback); the amount is held until it ends. `data` is the order with the `dispute`.",
  'order.dispute_closed': 'The dispute ended: `dispute.outcome` is `won` (the payment stands) or `lost` (the sale is reversed as a refund is, its commission taken back). `data` is the order with the `dispute`.',
  'transfer.domain_locked': "The name is locked at the registrar for this order's transfer. `data` is the order.",
  'transfer.initiated': 'The transfer to the buyer was requested at the registrar. `data` is the order.',
  'transfer.pending': 'The registry is processing the transfer (up to the 5-day deadline). `data` is the order.',
  'transfer.completed': "The buyer holds the name; the sale is booked in the partner's transactions. `data` is the order.",
  'transfer.failed': 'The transfer failed (`failure_reason` says why); the name is listed again. `data` is the order.',
  'brokerage.case_opened': 'A brokerage case was opened. `data` is the case at that step.',
  'brokerage.researching': 'Brokers research the owner (managed cases). `data` is the case at that step.',
  'brokerage.owner_contacted': 'The owner was contacted. `data` is the case at that step.',
  'brokerage.negotiating': 'Price negotiation is under way. `data` is the case at that step.',
  'brokerage.agreed': 'A price was agreed (`price_cents`). `data` is the case at that step.',
  'brokerage.payment_secured': "The buyer's payment is secured. `data` is the case at that step.",
  'brokerage.transferring': 'The name is being transferred to the buyer. `data` is the case at that step.',
  'brokerage.case_completed': 'The name was acquired; `outcome` has the price, fee and partner share. `data` is the case at that step.',
  'brokerage.case_closed': 'The case closed without acquiring the name; `outcome.reason` says why. `data` is the case at that step.',
};
