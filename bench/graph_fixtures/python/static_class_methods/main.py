class Config:
    defaults = {}

    @staticmethod
    def normalize(key):
        return key.lower()

    @classmethod
    def load(cls, data):
        cfg = cls()
        cfg.apply(cls.normalize("K"))
        return cfg

    def apply(self, key):
        return Config.normalize(key)


def main():
    conf = Config.load({})
    conf.apply("x")
