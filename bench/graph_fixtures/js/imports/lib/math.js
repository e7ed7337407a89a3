export function add(a, b) {
  return a + b;
}

export default function scale(x) {
  return add(x, x);
}
