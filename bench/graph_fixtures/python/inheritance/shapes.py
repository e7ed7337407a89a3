class Shape:
    def area(self):
        return 0

    def describe(self):
        return f"{self.name()} {self.area()}"

    def name(self):
        return "shape"


class Square(Shape):
    def __init__(self, side):
        self.side = side

    def area(self):
        return self.side * self.side


class Cube(Square):
    def name(self):
        return "cube"

    def volume(self):
        return self.area() * self.side
