/** Money arithmetic, in integer cents, in one place. */

/** Commission on `grossCents` at `bps` basis points, rounded down to the cent (the remainder stays with the service). */
export function commissionCents(grossCents: number, bps: number): number {
  if (!Number.isSafeInteger(grossCents) || grossCents < 0) throw new Error(`invalid amount ${grossCents}`);
  if (!Number.isInteger(bps) || bps < 0 || bps > 10_000) throw new Error(`invalid rate ${bps}`);
  return Math.floor((grossCents * bps) / 10_000);
}
