/** What every capability's activities are made from (the worker builds them once per process). */
import type { DataSource } from 'typeorm';
import type { MasterKeyring } from '../src/auth/secret-box';
import type { PaymentPort } from '../src/checkout/payments';
import type { StripeCheckout } from '../src/checkout/stripe';
import type { RegistrarPort } from '../src/orders/registrar';
import type { Starters } from '../src/temporal/starters';
import type { ActivityMail } from './mail';

export interface ActivityDeps {
  dataSource: DataSource;
  /** Opens webhook secrets for signing deliveries (a keyring, or one key as version 1). */
  masterKey: MasterKeyring | Buffer;
  /**
   * The workflow starts activities make (the recovery sweep, waking webhook deliveries after a
   * step appended events), bound by the worker to its client (src/temporal/starters.ts); absent
   * in tests that do not need them.
   */
  starters?: Starters;
  /**
   * Registrar adapter per environment. Sandbox defaults to the simulator; live has none unless one
   * is given here, and its transfers then wait for operators (never for a simulation).
   */
  registrars?: { sandbox?: RegistrarPort; live?: RegistrarPort };
  /**
   * Card processors per environment (refunds to the buyer's card, payments a crash left out);
   * sandbox defaults to the simulator over this database, live has none unless given.
   */
  payments?: Partial<Record<'sandbox' | 'live', PaymentPort>>;
  /** Processors whose own page took the payment (live: Stripe): the buyer's refunds go to them. */
  hosted?: { live?: StripeCheckout };
  /** Email: the SMTP transport, From and the links' base; absent: emails wait for a mail server. */
  mail?: ActivityMail;
  /** WEBHOOK_ALLOW_LOOPBACK; absent means off. */
  allowLoopbackWebhooks?: boolean;
}
