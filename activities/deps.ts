/** What every capability's activities are made from (the worker builds them once per process). */
import type { DataSource } from 'typeorm';
import type { RegistrarPort } from '../src/orders/registrar';
import type { WorkflowStarter } from '../src/temporal/start';

export interface ActivityDeps {
  dataSource: DataSource;
  /** Opens webhook secrets for signing deliveries. */
  masterKey: Buffer;
  /** Starts workflows (the recovery sweep); absent in tests that do not need it. */
  workflows?: WorkflowStarter;
  /**
   * Registrar adapter per environment. Sandbox defaults to the simulator; live has none unless one
   * is given here, and its transfers then wait for operators (never for a simulation).
   */
  registrars?: { sandbox?: RegistrarPort; live?: RegistrarPort };
  /** WEBHOOK_ALLOW_LOOPBACK; absent means off. */
  allowLoopbackWebhooks?: boolean;
}
