export const pad = (s: string, n: number): string => s.padStart(n);

export function title(s: string): string {
  return pad(s.toUpperCase(), 2);
}
