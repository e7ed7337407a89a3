class Counter:
    def __init__(self, start):
        self.value = start
        self.reset()

    def reset(self):
        self.value = 0
        self._log("reset")

    def _log(self, what):
        print(what)

    def bump(self):
        self.value += 1
        self._log("bump")
        return self


c = Counter(3)
c.bump().bump()
