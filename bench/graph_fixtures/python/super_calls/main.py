class Base:
    def __init__(self, name):
        self.name = name

    def save(self):
        return self.name


class Mixin:
    def save(self):
        return "mixin"


class Model(Mixin, Base):
    def __init__(self, name, extra):
        super().__init__(name)
        self.extra = extra

    def save(self):
        first = super().save()
        return first + Base.save(self)


Model("a", 1).save()
