export class Shape {
  constructor(name) {
    this.name = name;
    this.describe();
  }

  describe() {
    return this.label();
  }

  label() {
    return String(this.name);
  }
}

export class Circle extends Shape {
  constructor(r) {
    super('circle');
    this.r = r;
  }

  label() {
    return super.label() + this.area();
  }

  area() {
    return Math.PI * this.r * this.r;
  }

  static unit() {
    return new Circle(1);
  }
}
