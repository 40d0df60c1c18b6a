const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

export function count(value: number | null | undefined): string {
  return value === null || value === undefined ? '–' : integer.format(value);
}

export function rate(value: number | null | undefined): string {
  return value === null || value === undefined ? '–' : decimal.format(value);
}

export function bytes(value: number | null | undefined): string {
  if (value === null || value === undefined) return '–';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let n = value;
  let unit = 0;
  while (n >= 1024 && unit < units.length - 1) {
    n /= 1024;
    unit++;
  }
  return `${decimal.format(n)} ${units[unit]}`;
}

/** A time as the user's clock reads it, with how long ago. */
export function when(iso: string | null | undefined): string {
  if (!iso) return '–';
  const at = new Date(iso);
  return `${at.toLocaleString()} (${ago(at)})`;
}

export function ago(at: Date): string {
  const seconds = Math.round((Date.now() - at.getTime()) / 1000);
  if (seconds < 60) return `${Math.max(seconds, 0)} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86_400)} d ago`;
}
