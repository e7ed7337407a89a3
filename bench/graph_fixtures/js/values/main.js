const double = (x) => x * 2;

let pick = function (x) {
  return double(x);
};

const handlers = {
  save: (item) => double(item),
  remove(item) {
    return pick(item);
  },
};

function apply(fn, value) {
  return fn(value);
}

function each(items, callback) {
  items.forEach((item) => callback(item));
}

export function main() {
  handlers.save(1);
  handlers.remove(2);
  apply(double, 3);
  each([1], pick);
  setTimeout(() => double(4), 10);
  Promise.resolve(5);
}
