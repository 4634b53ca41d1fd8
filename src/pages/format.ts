/** How buyer-facing pages show amounts: integer cents as the currency's usual form ($1,234.50). */
export function money(cents: number, currency: string): string {
  return new Intl.NumberFormat('en-US', { style: 'currency', currency }).format(cents / 100);
}
