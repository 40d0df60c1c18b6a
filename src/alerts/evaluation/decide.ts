/**
 * Whether a value breaks the threshold, per thresholdType (README, "Alerts area"): `above` is >=,
 * `below` is <, and the extensions say what their names say; the ranges include both ends.
 */
export function exceeds(
  value: number,
  type: string,
  threshold: number,
  thresholdMax: number | null,
): boolean {
  const max = thresholdMax ?? threshold;
  switch (type) {
    case 'above':
      return value >= threshold;
    case 'above_exclusive':
      return value > threshold;
    case 'below':
      return value < threshold;
    case 'below_or_equal':
      return value <= threshold;
    case 'equal':
      return value === threshold;
    case 'not_equal':
      return value !== threshold;
    case 'between':
      return value >= threshold && value <= max;
    case 'not_between':
      return value < threshold || value > max;
    default:
      throw new Error(`unknown threshold type ${type}`);
  }
}
