import { Circle, Shape } from './shapes';

class Square extends Shape {
  describe() {
    return this.label();
  }
}

function main() {
  const c = new Circle(2);
  c.describe();
  Circle.unit();
  new Square('sq').describe();
}

main();
