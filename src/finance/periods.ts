/** Settlement periods: calendar months in UTC, as `YYYY-MM-DD` dates (first and last day). */

export function periodStartOf(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, '0')}-01`;
}

export function nextPeriodStart(periodStart: string): string {
  const [y, m] = periodStart.split('-').map(Number);
  return m === 12 ? `${y + 1}-01-01` : `${y}-${String(m + 1).padStart(2, '0')}-01`;
}

export function periodEndOf(periodStart: string): string {
  const next = new Date(`${nextPeriodStart(periodStart)}T00:00:00Z`);
  return new Date(next.getTime() - 24 * 60 * 60 * 1000).toISOString().slice(0, 10);
}
